#include "roll/agentic/env_manager.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <initializer_list>
#include <map>

#include "roll/core/batch.h"
#include "roll/core/error.h"
#include "roll/core/rng.h"
#include "roll/model/chat_template.h"
#include "roll/model/tokenizer.h"

namespace roll::agentic {

std::string format_agent_template(const std::string& tmpl, const nlohmann::json& fields) {
  std::string out = tmpl;
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    const std::string key = "{" + it.key() + "}";
    const std::string val = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    for (size_t p = 0; (p = out.find(key, p)) != std::string::npos; p += val.size()) out.replace(p, key.size(), val);
  }
  return out;
}

nlohmann::ordered_json traj_turn_messages(const EnvSpec& spec, int64_t step, const std::string& observation,
                                          const nlohmann::json& reset_info) {
  const nlohmann::json fields = {{"observation", observation},
                                 {"turn_idx", step + 1},
                                 {"actions_left", spec.max_steps - step},
                                 {"max_response_length", spec.max_tokens_per_step},
                                 {"suffix", reset_info.value("suffix", "")}};
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  std::string user = format_agent_template(spec.agent_template, fields);
  if (step == 0) {
    messages.push_back({{"role", "system"}, {"content", spec.agent_system_template}});
    user = reset_info.value("env_instruction", "") + "\n" + user;
  }
  messages.push_back({{"role", "user"}, {"content", user}});
  return messages;
}

EnvManager::EnvManager(EnvManagerOptions options, const model::Tokenizer& tokenizer,
                       const model::ChatTemplate& chat_template, LlmClient& llm, EpisodeSource& episodes)
    : o_(std::move(options)), tok_(tokenizer), tmpl_(chat_template), llm_(llm), episodes_(episodes) {
  env_ = make_env(o_.spec.env_type, o_.spec.env_config);
}

EnvManager::~EnvManager() = default;

namespace {

// splitmix64's finaliser chained over the parts (a boost-style combine before each): a well-spread
// 64-bit seed from small integers.
uint64_t mix_seed(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x243F6A8885A308D3ull;
  for (uint64_t p : parts) h = mix64(h ^ (p + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2)));
  return h;
}

}  // namespace

std::optional<Rollout> EnvManager::play_episode(int64_t episode_id, int64_t start_step, int64_t slot) {
  slot_ = slot;
  turn_ = 0;
  return play(episode_id, start_step);
}

EnvReset EnvManager::reset_env(int64_t episode_id) {
  return env_->reset(o_.group_seed + static_cast<uint64_t>(episode_id));
}

std::vector<int32_t> EnvManager::encode_prompt(const nlohmann::ordered_json& messages) const {
  const std::string text =
      model::apply_with_mock_system(tmpl_, messages, true, o_.skip_mock_system_prompt, nlohmann::ordered_json::object());
  return tok_.encode(text, false);
}

bool EnvManager::generate(const std::vector<int32_t>& input_ids, int64_t episode_id, Turn& turn) {
  // Per-request seed: a rollout depends on its episode, slot and turn only (exact resume,
  // docs/agentic.md), not on arrival order at the engine.
  const uint64_t seed = mix_seed({o_.group_seed, o_.mode == "val" ? 1u : 0u, static_cast<uint64_t>(episode_id),
                                  static_cast<uint64_t>(slot_), static_cast<uint64_t>(turn_++),
                                  o_.generation.seed.value_or(0)});
  const int64_t budget = std::min<int64_t>({o_.spec.max_tokens_per_step, o_.generation.max_new_tokens,
                                            o_.sequence_length - static_cast<int64_t>(input_ids.size())});
  turn.response_ids.clear();
  turn.response_logprobs.clear();
  // More than one round only with partial rollout: each continues the turn from what it has.
  for (uint64_t round = 0;; ++round) {
    GenerateRequest req;
    req.rid = fmt::format("{}_{}_{}_{}_{}", o_.mode, o_.spec.tag, o_.env_id, episode_id, request_counter_++);
    req.input_ids = input_ids;
    req.input_ids.insert(req.input_ids.end(), turn.response_ids.begin(), turn.response_ids.end());
    req.params = o_.generation;
    req.params.seed = round == 0 ? seed : mix_seed({seed, round});
    req.params.max_new_tokens = budget - static_cast<int64_t>(turn.response_ids.size());
    req.src_rank = o_.env_id;
    std::future<GenerateResult> answer;
    {
      // Checked under the lock stop() takes, so a stop never misses the request it must abort.
      std::lock_guard<std::mutex> g(mu_);
      if (stop_) return false;
      in_flight_ = req.rid;
      answer = llm_.generate(std::move(req));
    }
    GenerateResult res;
    try {
      res = answer.get();
    } catch (const std::exception&) {
      std::lock_guard<std::mutex> g(mu_);
      in_flight_.clear();
      if (stop_) return false;  // the client was closed under us: a stop, not a failure
      throw;
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      in_flight_.clear();
    }
    const bool aborted = res.finish_reason == "abort";
    if (aborted && !o_.partial_rollout) return false;
    turn.response_ids.insert(turn.response_ids.end(), res.output_token_ids.begin(), res.output_token_ids.end());
    turn.response_logprobs.insert(turn.response_logprobs.end(), res.output_logprobs.begin(), res.output_logprobs.end());
    // Cut off with budget left: the next round is held by the suspended router until it resumes.
    if (!aborted || static_cast<int64_t>(turn.response_ids.size()) >= budget) return true;
  }
}

EnvStep EnvManager::act(Turn& turn) {
  turn.response_text = tok_.decode(turn.response_ids, false);
  EnvStep st = env_->step(turn.response_text);
  turn.reward = st.reward;
  turn.info = st.info;
  return st;
}

void EnvManager::stop() {
  std::lock_guard<std::mutex> g(mu_);
  stop_ = true;
  if (!in_flight_.empty()) llm_.abort(in_flight_);
}

void EnvManager::run() {
  while (!stop_) {
    auto ep = episodes_.get_episode(o_.group_id, o_.env_id);
    if (!ep) break;
    for (;;) {
      auto r = play_episode(ep->episode_id, ep->start_step, ep->slot);
      if (r) {
        episodes_.put(std::move(*r));
        ++rollouts_done_;
        break;
      }
      if (stop_) break;  // aborted: the same episode is played again after resume
    }
  }
  episodes_.env_exit(o_.group_id, o_.env_id);
}

Batch EnvManager::token_sample(std::span<const Turn> turns, double score) const {
  const int64_t S = o_.sequence_length;
  const int32_t pad = tok_.pad_id().value_or(tok_.eos_id().value_or(0));
  at::Tensor ids = at::full({1, S}, pad, at::kLong), attn = at::zeros({1, S}, at::kLong),
             resp = at::zeros({1, S}, at::kLong), prompt = at::zeros({1, S}, at::kLong),
             scores = at::zeros({1, S}, at::kFloat), logp = at::zeros({1, S}, at::kFloat);
  auto id = ids.accessor<int64_t, 2>();
  auto at_ = attn.accessor<int64_t, 2>();
  auto rm = resp.accessor<int64_t, 2>();
  auto pm = prompt.accessor<int64_t, 2>();
  auto lp = logp.accessor<float, 2>();
  int64_t pos = 0;
  bool seen_response = false;
  for (const auto& t : turns) {
    for (int32_t tok : t.prompt_ids) {
      if (pos >= S) break;
      id[0][pos] = tok;
      at_[0][pos] = 1;
      if (!seen_response) pm[0][pos] = 1;
      ++pos;
    }
    for (size_t k = 0; k < t.response_ids.size() && pos < S; ++k, ++pos) {
      seen_response = true;
      id[0][pos] = t.response_ids[k];
      at_[0][pos] = 1;
      rm[0][pos] = 1;
      if (k < t.response_logprobs.size()) lp[0][pos] = t.response_logprobs[k];
    }
  }
  if (pos > 0) scores[0][pos - 1] = score;
  Batch b(1);
  b.set_tensor("input_ids", ids);
  b.set_tensor("attention_mask", attn);
  b.set_tensor("position_ids", (attn.cumsum(1) - 1).clamp_min(0));
  b.set_tensor("response_mask", resp);
  b.set_tensor("prompt_mask", prompt);
  b.set_tensor("scores", scores);
  b.set_tensor("infer_logprobs", logp.slice(1, 1, S).contiguous());  // aligned to predicting token t+1
  b.set_column("env_ids", {o_.env_id});
  b.set_column("group_ids", {o_.group_id});
  b.set_column("tags", {o_.spec.tag});
  return b;
}

nlohmann::json EnvManager::turn_metrics(std::span<const Turn> turns) const {
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, std::string> modes;
  for (const auto& t : turns) {
    if (!t.info.contains("metrics")) continue;
    for (auto it = t.info["metrics"].begin(); it != t.info["metrics"].end(); ++it) {
      double v = it.value().is_boolean() ? (it.value().get<bool>() ? 1.0 : 0.0) : it.value().get<double>();
      values[it.key()].push_back(v);
      if (t.info.contains("metrics_agg_mode") && t.info["metrics_agg_mode"].contains(it.key()))
        modes[it.key()] = t.info["metrics_agg_mode"][it.key()].get<std::string>();
    }
  }
  nlohmann::json out = nlohmann::json::object();
  const std::string& tag = o_.spec.tag;
  for (const auto& [k, v] : values) {
    const std::string mode = modes.count(k) ? modes[k] : "mean";
    double r = 0;
    if (mode == "sum" || mode == "mean") {
      for (double x : v) r += x;
      if (mode == "mean") r /= static_cast<double>(v.size());
    } else if (mode == "min") {
      r = *std::min_element(v.begin(), v.end());
    } else if (mode == "max") {
      r = *std::max_element(v.begin(), v.end());
    } else if (mode == "first") {
      r = v.front();
    } else {
      r = v.back();
    }
    out[fmt::format("env/{}/{}", tag, k)] = nlohmann::json::array({r});
  }
  out[fmt::format("env/{}/num_actions", tag)] = nlohmann::json::array({static_cast<double>(turns.size())});
  return out;
}

Rollout EnvManager::make_rollout(Batch data, int64_t episode_id, int64_t start_step) const {
  const std::string traj_group_id = fmt::format("{}_{}_{}_{}", o_.spec.tag, o_.group_id, episode_id, o_.group_seed);
  const auto rows = static_cast<size_t>(data.size());
  data.set_column("traj_group_id", NonTensorColumn(rows, Cell(traj_group_id)));
  data.set_column("traj_id", NonTensorColumn(rows, Cell(fmt::format("{}_{}", traj_group_id, o_.env_id))));
  Rollout r;
  r.group_id = o_.group_id;
  r.episode_id = episode_id;
  r.env_id = o_.env_id;
  r.start_step = start_step;
  r.data = std::make_shared<const Batch>(std::move(data));
  r.slot = slot_;
  return r;
}

void EnvManager::attach_render(Batch& data, int64_t episode_id, std::span<const Turn> turns,
                               const std::string& last_observation) const {
  if (!o_.render) return;
  double score = 0;
  for (const auto& t : turns) score += t.reward;
  std::string text = fmt::format("{} episode {} (group {}, env {}), {} turn(s), score {}\n", o_.spec.tag, episode_id,
                                 o_.group_id, o_.env_id, turns.size(), nlohmann::json(score).dump());
  for (size_t i = 0; i < turns.size(); ++i)
    text += fmt::format("\n== turn {}\n{}\n-- response\n{}\n-- reward {}\n", i + 1, turns[i].observation,
                        turns[i].response_text, nlohmann::json(turns[i].reward).dump());
  text += fmt::format("\n== final\n{}\n", last_observation);
  data.meta["render"] = text;
}

}  // namespace roll::agentic
