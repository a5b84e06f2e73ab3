#include "roll/workers/generate_protocol.h"

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::workers {
namespace {

// j[key] into `out` when present and not null; `where` names the message for errors.
template <typename T>
void read(const nlohmann::json& j, const char* key, T& out, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return;
  try {
    out = j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}.{}: wrong type ({})", where, key, j[key].dump()));
  }
}

template <typename T>
T required(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw Error(fmt::format("{}: '{}' is required", where, key));
  T out{};
  read(j, key, out, where);
  return out;
}

}  // namespace

nlohmann::json sampling_params_to_json(const SamplingParams& p) {
  nlohmann::json j = {{"temperature", p.temperature}, {"top_p", p.top_p},
                      {"top_k", p.top_k},             {"repetition_penalty", p.repetition_penalty},
                      {"n", p.n},                     {"max_new_tokens", p.max_new_tokens},
                      {"stop_token_ids", p.stop_token_ids}, {"stop", p.stop},
                      {"include_stop_str_in_output", p.include_stop_str_in_output}};
  if (p.seed) j["seed"] = *p.seed;
  return j;
}

SamplingParams sampling_params_from_json(const nlohmann::json& j) {
  SamplingParams p;
  const std::string where = "sampling_params";
  if (!j.is_object()) throw Error("sampling_params must be an object");
  read(j, "temperature", p.temperature, where);
  read(j, "top_p", p.top_p, where);
  read(j, "top_k", p.top_k, where);
  read(j, "repetition_penalty", p.repetition_penalty, where);
  read(j, "n", p.n, where);
  read(j, "max_new_tokens", p.max_new_tokens, where);
  read(j, "stop_token_ids", p.stop_token_ids, where);
  read(j, "stop", p.stop, where);
  read(j, "include_stop_str_in_output", p.include_stop_str_in_output, where);
  if (j.contains("seed") && !j["seed"].is_null()) {
    uint64_t seed = 0;
    read(j, "seed", seed, where);
    p.seed = seed;
  }
  return p;
}

nlohmann::json request_to_json(const GenerationRequest& r) {
  return {{"rid", r.request_id}, {"input_ids", r.prompt_token_ids}, {"sampling_params", sampling_params_to_json(r.params)}};
}

GenerationRequest request_from_json(const nlohmann::json& j) {
  GenerationRequest r;
  r.request_id = required<std::string>(j, "rid", "generate_request");
  const std::string where = "generate_request " + r.request_id;
  if (!j.contains("input_ids") || !j["input_ids"].is_array())
    throw Error(where + ": 'input_ids' (a list of token ids) is required");
  read(j, "input_ids", r.prompt_token_ids, where);
  r.params = sampling_params_from_json(j.value("sampling_params", nlohmann::json::object()));
  return r;
}

nlohmann::json routed_request_to_json(const RoutedRequest& r) {
  nlohmann::json j = request_to_json(r.request);
  j["affinity_key"] = r.affinity_key;
  return j;
}

RoutedRequest routed_request_from_json(const nlohmann::json& j) {
  RoutedRequest r;
  r.request = request_from_json(j);
  read(j, "affinity_key", r.affinity_key, "generate_request " + r.request.request_id);
  if (r.affinity_key.empty()) r.affinity_key = r.request.request_id;
  return r;
}

nlohmann::json abort_to_json(const std::string& request_id) { return {{"rid", request_id}}; }

std::string abort_from_json(const nlohmann::json& j) { return required<std::string>(j, "rid", "abort"); }

nlohmann::json output_to_json(const RequestOutput& out) {
  nlohmann::json ids = nlohmann::json::array(), lps = nlohmann::json::array(), vers = nlohmann::json::array(),
                 reasons = nlohmann::json::array(), stops = nlohmann::json::array(), texts = nlohmann::json::array();
  for (const auto& s : out.samples) {
    ids.push_back(s.token_ids);
    lps.push_back(s.logprobs);
    vers.push_back(s.weight_versions);
    reasons.push_back(roll::to_string(s.finish_reason));
    stops.push_back(s.stop_reason);
    texts.push_back(s.text);
  }
  return {{"rid", out.request_id},
          {"prompt_ids", out.prompt_token_ids},
          {"output_token_ids", ids},
          {"output_logprobs", lps},
          {"output_weight_versions", vers},
          {"finish_reasons", reasons},
          {"stop_reasons", stops},
          {"texts", texts},
          {"cached_prompt_tokens", out.cached_prompt_tokens}};
}

RequestOutput output_from_json(const nlohmann::json& j) {
  RequestOutput out;
  out.request_id = required<std::string>(j, "rid", "generate_request answer");
  const std::string where = "generate_request " + out.request_id + " answer";
  read(j, "prompt_ids", out.prompt_token_ids, where);
  read(j, "cached_prompt_tokens", out.cached_prompt_tokens, where);
  const auto ids = required<std::vector<std::vector<int32_t>>>(j, "output_token_ids", where);
  const auto lps = required<std::vector<std::vector<float>>>(j, "output_logprobs", where);
  const auto reasons = required<std::vector<std::string>>(j, "finish_reasons", where);
  std::vector<std::string> stops, texts;
  read(j, "stop_reasons", stops, where);
  read(j, "texts", texts, where);
  std::vector<std::vector<int64_t>> vers;  // absent from older peers: every sample gets none
  read(j, "output_weight_versions", vers, where);
  const size_t n = ids.size();
  if (lps.size() != n || reasons.size() != n || (!stops.empty() && stops.size() != n) ||
      (!texts.empty() && texts.size() != n))
    throw Error(fmt::format("{}: {} output_token_ids, {} output_logprobs, {} finish_reasons: one per sample", where,
                            n, lps.size(), reasons.size()));
  if (!vers.empty() && vers.size() != n)
    throw Error(fmt::format("{}: {} output_token_ids, {} output_weight_versions: one per sample", where, n,
                            vers.size()));
  for (size_t i = 0; i < n; ++i) {
    // Empty: a sample built without stamps. Otherwise a list that does not line up with the tokens
    // would attribute tokens to the wrong weights.
    if (!vers.empty() && !vers[i].empty() && vers[i].size() != ids[i].size())
      throw Error(fmt::format("{}: sample {} has {} output_token_ids and {} output_weight_versions: one per token",
                              where, i, ids[i].size(), vers[i].size()));
    SampleOutput s;
    s.token_ids = ids[i];
    s.logprobs = lps[i];
    if (!vers.empty()) s.weight_versions = vers[i];
    s.finish_reason = finish_reason_from(reasons[i], where);
    if (!stops.empty()) s.stop_reason = stops[i];
    if (!texts.empty()) s.text = texts[i];
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace roll::workers
