// The reward-<domain> role (docs/rewards.md): a CPU worker scoring samples of one domain. The kind comes
// from the domain's worker_cls (ROLL's class path) or, in tests, options["reward_type"]:
//   math_rule     MathRuleReward (one verifier process per worker, restarted on timeout)
//   code_sandbox  CodeSandboxReward, local mode (bwrap sandbox)
//   llm_judge     LlmJudgeScorer: the judge model in our engine (judge_model_type inference)
//   crossthinkqa  CrossThinkQaReward (reward_type loose|soft|strict, response_length_penalty_coef)
//   ifeval        IfevalReward (ROLL's GeneralRuleRewardWorker)
// compute_rewards (serial; DP_MP_COMPUTE from the driver) takes a Batch with non-tensor columns
// response_text, prompt_text, ground_truth (math) or test_cases, case_type, test_case_function
// (code; llm_judge reads prompt_text, response_text and ground_truth; crossthinkqa ground_truth
// and meta `responses_width`; ifeval ground_truth and tag), and returns tensor `scores` [B] with a
// `reward_info` column and meta metrics. The rule rewards also return `response_level_rewards`
// [B], the shaped reward the pipeline normalises (ROLL's tensor of that name), where it differs
// from the score.
#include <ATen/ATen.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "roll/config/reward_config.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/reward/code_reward.h"
#include "roll/reward/math/math_rule_reward.h"
#include "roll/reward/rule/crossthinkqa_reward.h"
#include "roll/reward/rule/ifeval_reward.h"
#include "roll/reward/sandbox.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/workers/llm_judge_scorer.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/rpc_methods.h"

namespace roll::workers {
namespace {

std::string reward_type_of(const runtime::WorkerContext& ctx) {
  if (ctx.options.contains("reward_type")) return ctx.options["reward_type"].get<std::string>();
  if (!ctx.config) throw Error("worker " + ctx.worker_name + ": no config and no reward_type option");
  const auto& w = worker_config_of(ctx.config->config, ctx.cluster);
  const std::string cls = w.worker_cls.value_or("");
  if (cls.find("math_rule") != std::string::npos) return "math_rule";
  if (cls.find("code_sandbox") != std::string::npos) return "code_sandbox";
  if (cls.find("llm_judge") != std::string::npos) return "llm_judge";
  if (cls.find("crossthinkqa") != std::string::npos) return "crossthinkqa";
  if (cls.find("ifeval") != std::string::npos) return "ifeval";
  throw ConfigError(ctx.cluster + ".worker_cls",
                    "unknown reward worker class '" + cls +
                        "' (rollcpp has math_rule, code_sandbox, llm_judge, crossthinkqa and ifeval)");
}

// CrossThinkQA's reward_type and response_length_penalty_coef: from the domain's config, else
// (tests) options rule_reward_type / response_length_penalty_coef.
std::unique_ptr<reward::CrossThinkQaReward> make_crossthinkqa(const runtime::WorkerContext& ctx) {
  const config::RewardConfig* rc = ctx.config ? &reward_config_of(ctx.config->config, ctx.cluster) : nullptr;
  const std::string key = "rewards." + ctx.cluster.substr(7) + ".reward_type";
  std::optional<std::string> type = rc ? rc->reward_type : std::nullopt;
  if (!rc && ctx.options.contains("rule_reward_type")) type = ctx.options["rule_reward_type"].get<std::string>();
  if (!type) throw ConfigError(key, "CrossThinkQARuleRewardWorker needs reward_type: loose, soft or strict");
  const double coef = rc ? rc->response_length_penalty_coef : ctx.options.value("response_length_penalty_coef", 0.0);
  return std::make_unique<reward::CrossThinkQaReward>(reward::parse_crossthinkqa_reward_type(*type, key), coef);
}

std::string text_cell(const Batch& b, const std::string& key, int64_t row) {
  if (!b.has_column(key)) return "";
  const Cell& c = b.cell(key, row);
  return c.is_string() ? c.get<std::string>() : (c.is_null() ? "" : c.dump());
}

class RewardRole : public runtime::Role {
 public:
  explicit RewardRole(runtime::WorkerContext& ctx) : ctx_(ctx), type_(reward_type_of(ctx)) {
    if (type_ == "math_rule") {
      math_ = std::make_unique<reward::MathRuleReward>();
    } else if (type_ == "crossthinkqa") {
      crossthinkqa_ = make_crossthinkqa(ctx);
    } else if (type_ == "ifeval") {
      ifeval_ = std::make_unique<reward::IfevalReward>();
    } else if (type_ == "llm_judge") {
      judge_ = std::make_unique<LlmJudgeScorer>(ctx);
      judge_timeout_ = std::chrono::seconds(ctx.options.value("judge_timeout_s", int64_t{1800}));
    } else {
      reward::SandboxOptions so;
      // One uid range per worker so concurrent workers never wait on each other's slots.
      so.uid_base += static_cast<uint32_t>(ctx.rank) * 8u + static_cast<uint32_t>(ctx.options.value("uid_offset", 0));
      so.uid_count = 8;
      const std::string why = reward::Sandbox::unavailable_reason(so);
      if (!why.empty()) throw Error(ctx.worker_name + ": the code sandbox cannot run here: " + why);
      sandbox_ = std::make_unique<reward::Sandbox>(so);
      code_ = std::make_unique<reward::CodeSandboxReward>(*sandbox_);
    }
    log::info("{}: {} reward ready", ctx.worker_name, type_);
  }

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kComputeRewards, [this](runtime::Payload p) {
      if (!p.batch) throw Error("compute_rewards needs a Batch");
      Batch b = std::move(*p.batch);
      const int64_t n = b.size();
      at::Tensor scores = at::zeros({n}, at::kFloat);
      NonTensorColumn info(static_cast<size_t>(n));
      int64_t failures = 0;
      if (judge_) return judge(b);
      if (crossthinkqa_ || ifeval_) return rule(b);
      for (int64_t i = 0; i < n; ++i) {
        const std::string response = text_cell(b, "response_text", i);
        if (math_) {
          auto r = math_->score(response, text_cell(b, "prompt_text", i), text_cell(b, "ground_truth", i));
          scores[i] = r.score;
          info[i] = nlohmann::json{{"answer", r.answer}, {"detail", r.detail}};
        } else {
          nlohmann::json cases = b.has_column("test_cases") ? b.cell("test_cases", i) : nlohmann::json();
          auto r = code_->compute(response, cases, text_cell(b, "case_type", i), text_cell(b, "test_case_function", i));
          scores[i] = r.score;
          info[i] = nlohmann::json{{"error_message", r.error_message}, {"error_class", reward::to_string(r.error_class)}};
          if (r.error_class == reward::CodeErrorClass::environment || r.error_class == reward::CodeErrorClass::unexpected)
            ++failures;
        }
      }
      Batch out(n);
      out.set_tensor("scores", scores);
      out.set_column("reward_info", std::move(info));
      nlohmann::json metrics = nlohmann::json::object();
      if (math_) {
        // The verifier counts since start; a call reports what happened during it.
        auto now = math_->metrics();
        for (const auto& [k, v] : now) metrics[ctx_.cluster.substr(7) + "/" + k] = nlohmann::json::array({v - last_[k]});
        last_ = std::move(now);
      }
      else
        metrics[ctx_.cluster.substr(7) + "/code_sandbox/environment_errors"] = nlohmann::json::array({failures});
      out.meta["metrics"] = metrics;
      return runtime::Payload(std::move(out));
    });
  }

 private:
  // Every sample's judge prompt generated together; the verdict is the score.
  runtime::Payload judge(const Batch& b) {
    const int64_t n = b.size();
    std::vector<JudgeSample> samples;
    for (int64_t i = 0; i < n; ++i)
      samples.push_back({text_cell(b, "prompt_text", i), text_cell(b, "response_text", i), text_cell(b, "ground_truth", i)});
    std::vector<JudgeVerdict> verdicts = judge_->score(samples, judge_timeout_);
    at::Tensor scores = at::zeros({n}, at::kFloat);
    NonTensorColumn info(static_cast<size_t>(n));
    double yes = 0;
    for (int64_t i = 0; i < n; ++i) {
      scores[i] = verdicts[i].score;
      yes += verdicts[i].score;
      info[i] = nlohmann::json{{"judge_answer", verdicts[i].answer}};
    }
    Batch out(n);
    out.set_tensor("scores", scores);
    out.set_column("reward_info", std::move(info));
    out.meta["metrics"] = nlohmann::json{
        {ctx_.cluster.substr(7) + "/llm_judge/yes_ratio", nlohmann::json::array({n > 0 ? yes / n : 0.0})}};
    return runtime::Payload(std::move(out));
  }

  // CrossThinkQA / IFEval: per sample score, shaped reward and what decided them.
  runtime::Payload rule(const Batch& b) {
    const int64_t n = b.size();
    const std::string d = ctx_.cluster.substr(7);
    at::Tensor scores = at::zeros({n}, at::kFloat), shaped = at::zeros({n}, at::kFloat);
    NonTensorColumn info(static_cast<size_t>(n));
    std::map<std::string, std::vector<double>> m;
    // ROLL's length reward reads the width of the padded responses tensor; the driver sends it.
    const int64_t width = b.meta.is_object() ? b.meta.value("responses_width", int64_t{-1}) : -1;
    for (int64_t i = 0; i < n; ++i) {
      const std::string response = text_cell(b, "response_text", i);
      if (crossthinkqa_) {
        // Without a width (a caller that is not the pipeline) the length reward is 0, its value
        // for any response width over 400 tokens.
        auto r = crossthinkqa_->score(response, text_cell(b, "ground_truth", i), width < 0 ? 401 : width);
        scores[i] = r.score;
        shaped[i] = r.response_level_reward;
        info[i] = nlohmann::json{{"extracted", r.extracted},      {"format", r.format_ok},
                                 {"correct", r.correct},          {"rule_reward", r.rule_reward},
                                 {"repetition_penalty", r.repetition_penalty}, {"length_reward", r.length_reward}};
        m[d + "/crossthinkqa/format"].push_back(r.format_ok ? 1.0 : 0.0);
        m[d + "/crossthinkqa/correct"].push_back(r.correct ? 1.0 : 0.0);
        m[d + "/crossthinkqa/repetition_penalty"].push_back(r.repetition_penalty);
      } else {
        const nlohmann::json truth = b.has_column("ground_truth") ? b.cell("ground_truth", i) : nlohmann::json();
        auto r = ifeval_->score(response, truth, text_cell(b, "tag", i));
        scores[i] = r.score;
        shaped[i] = r.response_level_reward;
        info[i] = nlohmann::json{{"func_name", r.func_name}, {"outcome", reward::to_string(r.outcome)},
                                 {"error", r.error}, {"repetition_penalty", r.repetition_penalty}};
        m[d + "/ifeval/pass"].push_back(r.score);
        m[d + "/ifeval/unchecked"].push_back(r.outcome == reward::IfevalOutcome::checked ? 0.0 : 1.0);
        m[d + "/ifeval/repetition_penalty"].push_back(r.repetition_penalty);
      }
    }
    Batch out(n);
    out.set_tensor("scores", scores);
    out.set_tensor("response_level_rewards", shaped);
    out.set_column("reward_info", std::move(info));
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [k, v] : m) metrics[k] = v;
    out.meta["metrics"] = metrics;
    return runtime::Payload(std::move(out));
  }

  runtime::WorkerContext& ctx_;
  std::string type_;
  std::unique_ptr<reward::MathRuleReward> math_;
  std::unique_ptr<reward::Sandbox> sandbox_;
  std::unique_ptr<reward::CodeSandboxReward> code_;
  std::unique_ptr<LlmJudgeScorer> judge_;
  std::unique_ptr<reward::CrossThinkQaReward> crossthinkqa_;
  std::unique_ptr<reward::IfevalReward> ifeval_;
  std::chrono::milliseconds judge_timeout_{0};
  std::map<std::string, double> last_;
};

}  // namespace

void register_reward_role() {
  runtime::register_role("reward", [](runtime::WorkerContext& c) { return std::make_unique<RewardRole>(c); });
}

}  // namespace roll::workers
