#include "roll/config/sampling_params.h"

#include <fmt/format.h>

#include "roll/config/schema.h"
#include "roll/core/error.h"

namespace roll::config {

SamplingParams sampling_params_from(const GeneratingArguments& g, std::vector<int32_t> stop_token_ids) {
  if (g.num_beams > 1) throw NotSupportedError(fmt::format("generating_args.num_beams = {} (beam search)", g.num_beams));
  SamplingParams p;
  p.temperature = g.do_sample ? g.temperature : 0.0;
  p.top_p = g.top_p;
  p.top_k = g.top_k;
  p.repetition_penalty = g.repetition_penalty;
  p.n = g.num_return_sequences;
  p.max_new_tokens = g.max_new_tokens > 0 ? g.max_new_tokens : g.max_length;
  p.stop_token_ids = std::move(stop_token_ids);
  p.stop = g.stop_strings;
  p.include_stop_str_in_output = g.include_stop_str_in_output.value_or(false);
  validate(p);
  return p;
}

}  // namespace roll::config
