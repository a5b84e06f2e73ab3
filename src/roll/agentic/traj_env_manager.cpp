#include "roll/agentic/traj_env_manager.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/batch.h"
#include "roll/core/error.h"
#include "roll/model/chat_template.h"
#include "roll/model/tokenizer.h"

namespace roll::agentic {
namespace {

struct Turn {
  std::vector<int32_t> prompt_ids, response_ids;
  std::vector<float> response_logprobs;
  double reward = 0.0;
  nlohmann::json info;
};

// Aggregates per-turn env metrics as their metrics_agg_mode says (mean/sum/min/max/first/last).
void aggregate_metrics(const std::vector<Turn>& turns, const std::string& tag, nlohmann::json& out) {
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
}

}  // namespace

std::string format_agent_template(const std::string& tmpl, const nlohmann::json& fields) {
  std::string out = tmpl;
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    const std::string key = "{" + it.key() + "}";
    const std::string val = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    for (size_t p = 0; (p = out.find(key, p)) != std::string::npos; p += val.size()) out.replace(p, key.size(), val);
  }
  return out;
}

TrajEnvManager::TrajEnvManager(TrajEnvManagerOptions options, const model::Tokenizer& tokenizer,
                               const model::ChatTemplate& chat_template, LlmClient& llm, EpisodeSource& episodes)
    : o_(std::move(options)), tok_(tokenizer), tmpl_(chat_template), llm_(llm), episodes_(episodes) {
  env_ = make_env(o_.spec.env_type, o_.spec.env_config);
  // The conversation-end token: the last special token the template renders for an empty user turn.
  const std::string text = model::apply_with_mock_system(
      tmpl_, nlohmann::ordered_json::array({{{"role", "user"}, {"content", ""}}}), false, o_.skip_mock_system_prompt,
      nlohmann::ordered_json::object());
  const auto ids = tok_.encode(text, false);
  for (auto it = ids.rbegin(); it != ids.rend(); ++it)
    if (tok_.is_special(*it)) {
      end_of_turn_ = {*it};
      break;
    }
}

TrajEnvManager::~TrajEnvManager() = default;

std::optional<Rollout> TrajEnvManager::play_episode(int64_t episode_id, int64_t start_step) {
  const auto& s = o_.spec;
  const uint64_t seed = o_.group_seed + static_cast<uint64_t>(episode_id);
  EnvReset reset = env_->reset(seed);
  std::string observation = reset.observation;
  const std::string instruction = reset.info.value("env_instruction", "");
  std::vector<Turn> turns;
  int64_t input_len = 0;
  bool terminated = false;
  for (int64_t step = 0; step < s.max_steps && !terminated && !stop_; ++step) {
    const nlohmann::json fields = {{"observation", observation},
                                   {"turn_idx", step + 1},
                                   {"actions_left", s.max_steps - step},
                                   {"max_response_length", s.max_tokens_per_step},
                                   {"suffix", reset.info.value("suffix", "")}};
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    std::string user = format_agent_template(s.agent_template, fields);
    if (step == 0) {
      messages.push_back({{"role", "system"}, {"content", s.agent_system_template}});
      user = instruction + "\n" + user;
    }
    messages.push_back({{"role", "user"}, {"content", user}});
    const std::string prompt_text = model::apply_with_mock_system(tmpl_, messages, true, o_.skip_mock_system_prompt,
                                                                  nlohmann::ordered_json::object());
    Turn turn;
    if (step > 0) turn.prompt_ids = end_of_turn_;
    auto ids = tok_.encode(prompt_text, false);
    turn.prompt_ids.insert(turn.prompt_ids.end(), ids.begin(), ids.end());
    if (input_len + static_cast<int64_t>(turn.prompt_ids.size()) >= o_.sequence_length) {  // MAX_LENGTH
      if (turns.empty())
        throw Error(fmt::format("env {} ({}): the first prompt has {} tokens, which does not fit sequence_length {}",
                                o_.env_id, s.tag, turn.prompt_ids.size(), o_.sequence_length));
      break;
    }
    std::vector<int32_t> input;
    for (const auto& t : turns) {
      input.insert(input.end(), t.prompt_ids.begin(), t.prompt_ids.end());
      input.insert(input.end(), t.response_ids.begin(), t.response_ids.end());
    }
    input.insert(input.end(), turn.prompt_ids.begin(), turn.prompt_ids.end());
    GenerateRequest req;
    req.rid = fmt::format("{}_{}_{}_{}", s.tag, o_.env_id, episode_id, request_counter_++);
    req.input_ids = input;
    req.params = o_.generation;
    req.params.max_new_tokens = std::min<int64_t>(
        {s.max_tokens_per_step, o_.generation.max_new_tokens, o_.sequence_length - static_cast<int64_t>(input.size())});
    req.src_rank = o_.env_id;
    GenerateResult res = llm_.generate(std::move(req)).get();
    if (res.finish_reason == "abort") return std::nullopt;  // retried after resume
    turn.response_ids = res.output_token_ids;
    turn.response_logprobs = res.output_logprobs;
    // A response that ends with the conversation-end token must not get a second one.
    if (!end_of_turn_.empty() && !turn.response_ids.empty() && turn.response_ids.back() == end_of_turn_.back()) {
      turn.response_ids.pop_back();
      if (!turn.response_logprobs.empty()) turn.response_logprobs.pop_back();
    }
    input_len = static_cast<int64_t>(input.size() + turn.response_ids.size());
    EnvStep st = env_->step(tok_.decode(turn.response_ids, false));
    turn.reward = st.reward;
    turn.info = st.info;
    observation = st.observation;
    terminated = st.terminated;
    turns.push_back(std::move(turn));
  }
  if (turns.empty()) return std::nullopt;

  // One sample: prompt_1 + response_1 + prompt_2 + ... right-padded to sequence_length.
  const int64_t S = o_.sequence_length;
  const int32_t pad = tok_.pad_id().value_or(tok_.eos_id().value_or(0));
  at::Tensor ids = at::full({1, S}, pad, at::kLong), attn = at::zeros({1, S}, at::kLong),
             resp = at::zeros({1, S}, at::kLong), prompt = at::zeros({1, S}, at::kLong),
             scores = at::zeros({1, S}, at::kFloat), logp = at::zeros({1, S}, at::kFloat);
  int64_t pos = 0;
  bool seen_response = false;
  double episode_score = 0;
  nlohmann::json step_scores = nlohmann::json::array();
  for (const auto& t : turns) {
    episode_score += t.reward;
    step_scores.push_back(t.reward);
    for (int32_t id : t.prompt_ids) {
      if (pos >= S) break;
      ids[0][pos] = id;
      attn[0][pos] = 1;
      if (!seen_response) prompt[0][pos] = 1;
      ++pos;
    }
    for (size_t k = 0; k < t.response_ids.size() && pos < S; ++k, ++pos) {
      seen_response = true;
      ids[0][pos] = t.response_ids[k];
      attn[0][pos] = 1;
      resp[0][pos] = 1;
      if (k < t.response_logprobs.size()) logp[0][pos] = t.response_logprobs[k];
    }
  }
  if (pos > 0) scores[0][pos - 1] = episode_score;
  Batch b(1);
  b.set_tensor("input_ids", ids);
  b.set_tensor("attention_mask", attn);
  b.set_tensor("position_ids", (attn.cumsum(1) - 1).clamp_min(0));
  b.set_tensor("response_mask", resp);
  b.set_tensor("prompt_mask", prompt);
  b.set_tensor("scores", scores);
  b.set_tensor("infer_logprobs", logp.slice(1, 1, S).contiguous());  // aligned to predicting token t+1
  const std::string traj_group_id = fmt::format("{}_{}_{}_{}", s.tag, o_.group_id, episode_id, o_.group_seed);
  b.set_column("env_ids", {o_.env_id});
  b.set_column("group_ids", {o_.group_id});
  b.set_column("tags", {s.tag});
  b.set_column("step_scores", {step_scores});
  b.set_column("episode_scores", {episode_score});
  b.set_column("traj_group_id", {traj_group_id});
  b.set_column("traj_id", {fmt::format("{}_{}", traj_group_id, o_.env_id)});
  nlohmann::json metrics = nlohmann::json::object();
  aggregate_metrics(turns, s.tag, metrics);
  int64_t response_tokens = 0;
  for (const auto& t : turns) response_tokens += static_cast<int64_t>(t.response_ids.size());
  metrics["env/response_length"] = nlohmann::json::array({static_cast<double>(response_tokens)});
  b.meta["metrics"] = metrics;
  Rollout r;
  r.group_id = o_.group_id;
  r.episode_id = episode_id;
  r.env_id = o_.env_id;
  r.start_step = start_step;
  r.data = std::make_shared<const Batch>(std::move(b));
  return r;
}

void TrajEnvManager::run() {
  while (!stop_) {
    auto ep = episodes_.get_episode(o_.group_id, o_.env_id);
    if (!ep) break;
    for (;;) {
      auto r = play_episode(ep->episode_id, ep->start_step);
      if (r) {
        episodes_.put(std::move(*r));
        break;
      }
      if (stop_) break;  // aborted: the same episode is played again after resume
    }
  }
  episodes_.env_exit(o_.group_id, o_.env_id);
}

}  // namespace roll::agentic
