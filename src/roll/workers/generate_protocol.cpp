#include "roll/workers/generate_protocol.h"

#include "roll/core/error.h"

namespace roll::workers {
namespace {

template <typename T>
void read(const nlohmann::json& j, const char* key, T& out) {
  if (!j.contains(key) || j[key].is_null()) return;
  try {
    out = j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(std::string("sampling_params.") + key + ": wrong type (" + j[key].dump() + ")");
  }
}

engine::FinishReason parse_reason(const std::string& s) {
  if (s == "stop") return engine::FinishReason::stop;
  if (s == "length") return engine::FinishReason::length;
  if (s == "abort") return engine::FinishReason::abort;
  throw Error("unknown finish reason '" + s + "'");
}

}  // namespace

nlohmann::json sampling_params_to_json(const engine::SamplingParams& p) {
  nlohmann::json j = {{"temperature", p.temperature}, {"top_p", p.top_p},
                      {"top_k", p.top_k},             {"repetition_penalty", p.repetition_penalty},
                      {"n", p.n},                     {"max_new_tokens", p.max_new_tokens},
                      {"stop_token_ids", p.stop_token_ids}, {"stop", p.stop},
                      {"include_stop_str_in_output", p.include_stop_str_in_output}};
  if (p.seed) j["seed"] = *p.seed;
  return j;
}

engine::SamplingParams sampling_params_from_json(const nlohmann::json& j) {
  engine::SamplingParams p;
  if (!j.is_object()) throw Error("sampling_params must be an object");
  read(j, "temperature", p.temperature);
  read(j, "top_p", p.top_p);
  read(j, "top_k", p.top_k);
  read(j, "repetition_penalty", p.repetition_penalty);
  read(j, "n", p.n);
  read(j, "max_new_tokens", p.max_new_tokens);
  read(j, "stop_token_ids", p.stop_token_ids);
  read(j, "stop", p.stop);
  read(j, "include_stop_str_in_output", p.include_stop_str_in_output);
  if (j.contains("seed") && !j["seed"].is_null()) {
    uint64_t seed = 0;
    read(j, "seed", seed);
    p.seed = seed;
  }
  return p;
}

nlohmann::json request_to_json(const engine::GenerationRequest& r) {
  return {{"rid", r.request_id}, {"input_ids", r.prompt_token_ids}, {"sampling_params", sampling_params_to_json(r.params)}};
}

engine::GenerationRequest request_from_json(const nlohmann::json& j) {
  engine::GenerationRequest r;
  if (!j.contains("rid") || !j["rid"].is_string()) throw Error("generate_request: 'rid' (a string) is required");
  r.request_id = j["rid"].get<std::string>();
  if (!j.contains("input_ids") || !j["input_ids"].is_array())
    throw Error("generate_request " + r.request_id + ": 'input_ids' (a list of token ids) is required");
  try {
    r.prompt_token_ids = j["input_ids"].get<std::vector<int32_t>>();
  } catch (const nlohmann::json::exception&) {
    throw Error("generate_request " + r.request_id + ": 'input_ids' must be integers");
  }
  r.params = sampling_params_from_json(j.value("sampling_params", nlohmann::json::object()));
  return r;
}

nlohmann::json output_to_json(const engine::RequestOutput& out) {
  nlohmann::json ids = nlohmann::json::array(), lps = nlohmann::json::array(), reasons = nlohmann::json::array();
  for (const auto& s : out.samples) {
    ids.push_back(s.token_ids);
    lps.push_back(s.logprobs);
    reasons.push_back(engine::to_string(s.finish_reason));
  }
  return {{"rid", out.request_id},          {"output_token_ids", ids}, {"output_logprobs", lps},
          {"finish_reasons", reasons},     {"cached_prompt_tokens", out.cached_prompt_tokens}};
}

engine::RequestOutput output_from_json(const nlohmann::json& j) {
  engine::RequestOutput out;
  out.request_id = j.at("rid").get<std::string>();
  out.cached_prompt_tokens = j.value("cached_prompt_tokens", int64_t{0});
  const auto& ids = j.at("output_token_ids");
  const auto& lps = j.at("output_logprobs");
  const auto& reasons = j.at("finish_reasons");
  for (size_t i = 0; i < ids.size(); ++i) {
    engine::SampleOutput s;
    s.token_ids = ids[i].get<std::vector<int32_t>>();
    s.logprobs = lps[i].get<std::vector<float>>();
    s.finish_reason = parse_reason(reasons[i].get<std::string>());
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace roll::workers
