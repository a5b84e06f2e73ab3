#pragma once
// The infer service's request and response as JSON (DESIGN section 3; spec 1.6):
//   generate_request {rid, input_ids, sampling_params{temperature, top_p, top_k, n, max_new_tokens,
//                     repetition_penalty, seed, stop_token_ids, stop}}
//   -> {rid, output_token_ids[n][], output_logprobs[n][], finish_reasons[n], cached_prompt_tokens}
// "finished" <=> no finish reason equals "abort".
#include <nlohmann/json.hpp>

#include "roll/engine/request.h"

namespace roll::workers {

nlohmann::json sampling_params_to_json(const engine::SamplingParams& p);
// Missing fields keep SamplingParams' defaults; wrong types are roll::Errors naming the field.
engine::SamplingParams sampling_params_from_json(const nlohmann::json& j);

nlohmann::json request_to_json(const engine::GenerationRequest& r);
engine::GenerationRequest request_from_json(const nlohmann::json& j);

nlohmann::json output_to_json(const engine::RequestOutput& out);
engine::RequestOutput output_from_json(const nlohmann::json& j);

}  // namespace roll::workers
