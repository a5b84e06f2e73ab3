// The llm_judge reward worker (judge_model_type inference, docs/rewards.md) as a real process over a tiny
// random model: it starts, answers compute_rewards with a score in {0, 1} per sample, the score is
// the verdict of the answer it reports, and the answer is what our engine generates greedily for
// the judge prompt (computed here, in this process, from the same model directory).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "roll/core/batch.h"
#include "roll/engine/engine_config.h"
#include "roll/core/generation.h"
#include "roll/model/chat_template.h"
#include "roll/model/model_init.h"
#include "roll/model/stop_tokens.h"
#include "roll/model/tokenizer.h"
#include "roll/model/transformer.h"
#include "roll/reward/llm_judge.h"
#include "roll/runtime/runtime.h"
#include "roll/workers/infer_service.h"
#include "unit/multiprocess.h"
#include "unit/worker_runtime.h"

namespace roll::workers {
namespace {

constexpr int64_t kMaxNewTokens = 6;

// Greedy answer of the judge model for one sample, from the pieces the worker is made of.
std::string reference_answer(const std::string& dir, const std::string& prompt, const std::string& response,
                             const std::string& reference) {
  auto tok = model::Tokenizer::from_dir(dir);
  auto chat = model::ChatTemplate::from_model_dir("native", dir);
  const std::string text = reward::fill_judge_template(reward::judge_template("", "k"), reward::judge_question(prompt),
                                                       reward::judge_response(response), reference);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "user"}, {"content", text}});
  engine::EngineConfig ec;
  ec.max_model_len = 512;
  ec.warm_up = false;
  InferService service(model::Transformer::load(dir, at::kFloat), ec);
  roll::GenerationRequest r;
  r.request_id = "ref";
  r.prompt_token_ids = tok.encode(chat.apply(messages, true), true);
  r.params.temperature = 0;
  r.params.max_new_tokens = kMaxNewTokens;
  r.params.stop_token_ids = model::stop_token_ids(dir, tok);
  std::promise<InferService::Result> p;
  auto f = p.get_future();
  service.submit(std::move(r), [&p](InferService::Result res) { p.set_value(std::move(res)); });
  auto res = f.get();
  return tok.decode(std::get<roll::RequestOutput>(res).samples.at(0).token_ids, true);
}

TEST(WorkersLlmJudge, ScoresEverySampleByTheJudgesAnswer) {
  const std::string dir = test::make_scratch_dir();
  model::ModelInitOptions mo;
  mo.preset = "tiny";
  mo.out_dir = dir + "/judge";
  model::init_model_dir(mo);

  runtime::Runtime rt(test::worker_runtime_options(dir));
  runtime::ClusterSpec spec;
  spec.placement.name = "reward-judge";
  config::WorkerPlacement w;
  w.name = "reward-judge-0";
  spec.placement.workers.push_back(w);
  spec.placement.cpu_only = true;
  spec.role = "reward";
  spec.options = {{"reward_type", "llm_judge"}, {"model_dir", mo.out_dir}, {"dtype", "fp32"},
                  {"max_model_len", 512},       {"warm_up", false},          {"max_new_tokens", kMaxNewTokens}};
  auto judge = rt.start(std::move(spec));

  const std::vector<std::string> prompts = {
      "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n",
      "<|im_start|>user\nName a prime.<|im_end|>\n<|im_start|>assistant\n",
      "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"};
  const std::vector<std::string> responses = {"5<|im_end|>", "Seven.<|endoftext|>", "5<|im_end|>"};
  const std::vector<std::string> truths = {"5", "7", "5"};
  Batch b(3);
  NonTensorColumn p, r, g;
  for (int i = 0; i < 3; ++i) {
    p.push_back(prompts[i]);
    r.push_back(responses[i]);
    g.push_back(truths[i]);
  }
  b.set_column("prompt_text", p);
  b.set_column("response_text", r);
  b.set_column("ground_truth", g);
  runtime::Payload out = judge->call("compute_rewards", runtime::Dispatch::dp_mp_compute, runtime::Payload(b)).get();
  ASSERT_TRUE(out.batch);
  const at::Tensor scores = out.batch->tensor("scores");
  ASSERT_EQ(scores.numel(), 3);
  std::vector<std::string> answers;
  for (int64_t i = 0; i < 3; ++i) {
    const double s = scores[i].item<double>();
    EXPECT_TRUE(s == 0.0 || s == 1.0) << s;
    const std::string answer = out.batch->cell("reward_info", i)["judge_answer"].get<std::string>();
    EXPECT_EQ(s, reward::judge_verdict(answer)) << answer;
    answers.push_back(answer);
  }
  EXPECT_EQ(answers[0], answers[2]);  // the same judge prompt, greedy: the same answer
  EXPECT_EQ(answers[0], reference_answer(mo.out_dir, prompts[0], responses[0], truths[0]));
  EXPECT_EQ(answers[1], reference_answer(mo.out_dir, prompts[1], responses[1], truths[1]));
  EXPECT_FALSE(answers[0].empty());
  judge->shutdown();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roll::workers
