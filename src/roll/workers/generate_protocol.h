#pragma once
// The one place a generate request and its answer become JSON and back (docs/design.md section 3;
// docs/pipelines.md). On the wire:
//   generate_request {rid, input_ids, sampling_params{temperature, top_p, top_k, n, max_new_tokens,
//                     repetition_penalty, seed, stop_token_ids, stop, include_stop_str_in_output},
//                     affinity_key (to a router only)}
//   -> {rid, prompt_ids, output_token_ids[n][], output_logprobs[n][], output_weight_versions[n][],
//       finish_reasons[n], stop_reasons[n], texts[n], cached_prompt_tokens}
//   abort {rid}
// output_weight_versions holds, per token, the weight version that sampled it; an answer without
// it (an older peer) decodes to empty vectors. "finished" <=> no finish reason equals "abort".
// Decoders throw roll::Error naming the field.
#include <string>

#include <nlohmann/json.hpp>

#include "roll/core/generation.h"

namespace roll::workers {

nlohmann::json sampling_params_to_json(const SamplingParams& p);
// Missing fields keep SamplingParams' defaults; wrong types are roll::Errors naming the field.
SamplingParams sampling_params_from_json(const nlohmann::json& j);

nlohmann::json request_to_json(const GenerationRequest& r);
GenerationRequest request_from_json(const nlohmann::json& j);

// A request to a router service: the request and the key that keeps related requests on one
// infer rank (the env for agentic; the prompt for RLVR). An empty key means the request id.
struct RoutedRequest {
  GenerationRequest request;
  std::string affinity_key;
};
nlohmann::json routed_request_to_json(const RoutedRequest& r);
RoutedRequest routed_request_from_json(const nlohmann::json& j);

// abort {rid}: stop one request (its own answer then carries finish reason "abort").
nlohmann::json abort_to_json(const std::string& request_id);
std::string abort_from_json(const nlohmann::json& j);

nlohmann::json output_to_json(const RequestOutput& out);
RequestOutput output_from_json(const nlohmann::json& j);

}  // namespace roll::workers
