#pragma once
// The llm_judge reward with judge_model_type: inference (docs/rewards.md) inside a reward worker: the
// judge model (the domain's model_args.model_name_or_path, else reward_pretrain) served by our
// engine (workers/infer_service.h) on the worker's own devices. Each sample becomes the judge
// prompt of reward/llm_judge.h, rendered as one user turn with the domain's chat template
// (data_args.template, else the model's own), answered with the domain's generating_args, and
// scored by the verdict of the answer (1 for YES, else 0).
// Without a config (tests) the worker's options give model_dir, dtype, judge_prompt, template,
// max_new_tokens (greedy decoding) and the engine test options of engine_from_config.h.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace roll::runtime {
struct WorkerContext;
}

namespace roll::workers {

struct JudgeSample {
  std::string prompt_text;    // the policy's decoded prompt (chat template included)
  std::string response_text;  // the policy's decoded response
  std::string reference;      // ground_truth
};

struct JudgeVerdict {
  double score = 0.0;
  std::string answer;  // what the judge said
};

class LlmJudgeScorer {
 public:
  explicit LlmJudgeScorer(const runtime::WorkerContext& ctx);
  ~LlmJudgeScorer();

  // One answer per sample, generated together; a judge that does not answer within `timeout`
  // is a roll::Error naming the worker.
  std::vector<JudgeVerdict> score(const std::vector<JudgeSample>& samples, std::chrono::milliseconds timeout);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::workers
