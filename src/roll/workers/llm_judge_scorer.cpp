#include "roll/workers/llm_judge_scorer.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>

#include "roll/config/model_path.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/config/sampling_params.h"
#include "roll/core/generation.h"
#include "roll/model/chat_template.h"
#include "roll/model/stop_tokens.h"
#include "roll/model/tokenizer.h"
#include "roll/model/transformer.h"
#include "roll/reward/llm_judge.h"
#include "roll/runtime/role.h"
#include "roll/workers/engine_from_config.h"
#include "roll/workers/infer_service.h"
#include "roll/workers/role_config.h"

namespace roll::workers {
namespace {

// The judge's model: the domain's model_args.model_name_or_path, else reward_pretrain.
std::string judge_model_dir(const runtime::WorkerContext& ctx) {
  if (ctx.options.contains("model_dir") || !ctx.config) return model_dir_of(ctx);
  const auto& c = ctx.config->config;
  const auto& w = worker_config_of(c, ctx.cluster);
  if (w.model_args.model_name_or_path) return model_dir_of(ctx);
  const std::string key = ctx.cluster.substr(7);
  if (!c.reward_pretrain)
    throw ConfigError("rewards." + key + ".model_args.model_name_or_path",
                      "the llm_judge reward of domain '" + key +
                          "' needs its judge model: set rewards." + key + ".model_args.model_name_or_path or reward_pretrain");
  return config::resolve_model_path(*c.reward_pretrain, "reward_pretrain");
}

}  // namespace

struct LlmJudgeScorer::Impl {
  std::string worker;
  std::shared_ptr<model::Tokenizer> tokenizer;
  std::optional<model::ChatTemplate> chat;
  std::string judge_template;
  SamplingParams params;
  int64_t max_prompt_tokens = 0;
  std::unique_ptr<InferService> service;
  uint64_t seed = 0, calls = 0;
};

LlmJudgeScorer::LlmJudgeScorer(const runtime::WorkerContext& ctx) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.worker = ctx.worker_name;
  const std::string dir = judge_model_dir(ctx);
  const std::string key = "rewards." + (ctx.cluster.size() > 7 ? ctx.cluster.substr(7) : ctx.cluster);
  std::string dtype = ctx.options.value("dtype", "");
  std::string template_name = ctx.options.value("template", "native");
  std::string judge_prompt = ctx.options.value("judge_prompt", "");
  config::GeneratingArguments ga;
  ga.do_sample = false;
  ga.max_new_tokens = ctx.options.value("max_new_tokens", int64_t{16});
  if (ctx.config) {
    const auto& c = ctx.config->config;
    const auto& r = reward_config_of(c, ctx.cluster);
    if (r.judge_model_type.value_or("inference") != "inference")
      throw ConfigError(key + ".judge_model_type",
                        fmt::format("{}.judge_model_type '{}': only 'inference' (our engine) is served; 'api' needs "
                                    "network access, which rollcpp never uses",
                                    key, *r.judge_model_type));
    if (dtype.empty()) dtype = r.worker.model_args.dtype;
    if (r.worker.data_args) template_name = r.worker.data_args->template_name;
    if (r.judge_prompt) judge_prompt = *r.judge_prompt;
    if (r.worker.generating_args) ga = *r.worker.generating_args;
    im.seed = static_cast<uint64_t>(c.seed);
  }
  if (dtype.empty()) dtype = "bf16";
  im.judge_template = reward::judge_template(judge_prompt, key + ".judge_prompt");
  im.tokenizer = std::make_shared<model::Tokenizer>(model::Tokenizer::from_dir(dir));
  im.chat.emplace(model::ChatTemplate::from_model_dir(template_name, dir));
  im.params = config::sampling_params_from(ga, model::stop_token_ids(dir, *im.tokenizer));
  im.params.n = 1;  // one verdict per sample
  im.service = std::make_unique<InferService>(model::Transformer::load(dir, engine_dtype_named(dtype)),
                                              engine_config_of(ctx));
  im.max_prompt_tokens = std::max<int64_t>(1, im.service->max_model_len() - im.params.max_new_tokens);
  log::info("{}: llm_judge ready on {} ({}), template {}, max_new_tokens {}", ctx.worker_name, dir, dtype,
            template_name, im.params.max_new_tokens);
}

LlmJudgeScorer::~LlmJudgeScorer() = default;

std::vector<JudgeVerdict> LlmJudgeScorer::score(const std::vector<JudgeSample>& samples,
                                                std::chrono::milliseconds timeout) {
  Impl& im = *impl_;
  const uint64_t call = im.calls++;
  std::vector<std::future<InferService::Result>> answers;
  for (size_t i = 0; i < samples.size(); ++i) {
    const JudgeSample& s = samples[i];
    const std::string text = reward::fill_judge_template(im.judge_template, reward::judge_question(s.prompt_text),
                                                         reward::judge_response(s.response_text), s.reference);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    messages.push_back({{"role", "user"}, {"content", text}});
    std::vector<int32_t> ids = im.tokenizer->encode(im.chat->apply(messages, true), true);
    // A judge prompt longer than the engine allows keeps its end (the response and the reference).
    if (static_cast<int64_t>(ids.size()) > im.max_prompt_tokens)
      ids.erase(ids.begin(), ids.end() - im.max_prompt_tokens);
    GenerationRequest r;
    r.request_id = fmt::format("judge-{}-{}", call, i);
    r.prompt_token_ids = std::move(ids);
    r.params = im.params;
    r.params.seed = im.seed * 1000003u + call * 10007u + i;
    auto promise = std::make_shared<std::promise<InferService::Result>>();
    answers.push_back(promise->get_future());
    im.service->submit(std::move(r), [promise](InferService::Result res) { promise->set_value(std::move(res)); });
  }
  std::vector<JudgeVerdict> out(samples.size());
  for (size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].wait_for(timeout) != std::future_status::ready) {
      im.service->abort_all();
      throw Error(fmt::format("{}: the judge did not answer sample {} within {} s", im.worker, i, timeout.count() / 1000));
    }
    InferService::Result res = answers[i].get();
    if (auto* why = std::get_if<std::string>(&res)) throw Error(fmt::format("{}: judge request {}: {}", im.worker, i, *why));
    const auto& o = std::get<RequestOutput>(res);
    const auto& tokens = o.samples.at(0).token_ids;
    out[i].answer = im.tokenizer->decode(tokens, true);
    out[i].score = reward::judge_verdict(out[i].answer);
  }
  return out;
}

}  // namespace roll::workers
