#pragma once
// ROLL's generating_args -> the engine's SamplingParams (docs/config.md).
#include <cstdint>
#include <vector>

#include "roll/core/generation.h"

namespace roll::config {

struct GeneratingArguments;

// do_sample false -> greedy; num_beams > 1 is a NotSupportedError (beam search is not
// implemented); stop_token_ids = [eos, pad] as ROLL's vLLM path passes them.
SamplingParams sampling_params_from(const GeneratingArguments& args, std::vector<int32_t> stop_token_ids);

}  // namespace roll::config
