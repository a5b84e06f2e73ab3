// The reward-<domain> role (docs/rewards.md): a CPU worker scoring samples of one domain. The kind comes
// from the domain's worker_cls (ROLL's class path) or, in tests, options["reward_type"]:
//   math_rule     MathRuleReward (one verifier process per worker, restarted on timeout)
//   code_sandbox  CodeSandboxReward, local mode (bwrap sandbox)
//   llm_judge     LlmJudgeScorer: the judge model in our engine (judge_model_type inference)
// compute_rewards (serial; DP_MP_COMPUTE from the driver) takes a Batch with non-tensor columns
// response_text, prompt_text, ground_truth (math) or test_cases, case_type, test_case_function
// (code; llm_judge reads prompt_text, response_text and ground_truth), and returns tensor
// `scores` [B] with a `reward_info` column and meta metrics.
#include <ATen/ATen.h>

#include <chrono>
#include <map>
#include <memory>

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/reward/code_reward.h"
#include "roll/reward/math/math_rule_reward.h"
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
  throw ConfigError(ctx.cluster + ".worker_cls", "unknown reward worker class '" + cls +
                                                     "' (rollcpp has math_rule, code_sandbox and llm_judge)");
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

  runtime::WorkerContext& ctx_;
  std::string type_;
  std::unique_ptr<reward::MathRuleReward> math_;
  std::unique_ptr<reward::Sandbox> sandbox_;
  std::unique_ptr<reward::CodeSandboxReward> code_;
  std::unique_ptr<LlmJudgeScorer> judge_;
  std::chrono::milliseconds judge_timeout_{0};
  std::map<std::string, double> last_;
};

}  // namespace

void register_reward_role() {
  runtime::register_role("reward", [](runtime::WorkerContext& c) { return std::make_unique<RewardRole>(c); });
}

}  // namespace roll::workers
