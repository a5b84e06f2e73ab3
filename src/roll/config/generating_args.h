#pragma once
// `<worker>.generating_args` and an env manager's `generating_args` (ROLL's GeneratingArguments,
// docs/config.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/node.h"

namespace roll::config {

struct GeneratingArguments {
  bool do_sample = true;
  double temperature = 0.95;
  double top_p = 0.7;
  int64_t top_k = 50;
  int64_t num_beams = 1;
  int64_t max_length = 8192;
  int64_t max_new_tokens = 8192;
  double repetition_penalty = 1.0;
  double length_penalty = 1.0;
  int64_t num_return_sequences = 1;
  std::vector<std::string> stop_strings;
  std::optional<bool> include_stop_str_in_output;
  int64_t logprobs = 0;

  template <typename V>
  void visit(V& v) {
    v("do_sample", do_sample);
    v("temperature", temperature);
    v("top_p", top_p);
    v("top_k", top_k);
    v("num_beams", num_beams);
    v("max_length", max_length);
    v("max_new_tokens", max_new_tokens);
    v("repetition_penalty", repetition_penalty);
    v("length_penalty", length_penalty);
    v("num_return_sequences", num_return_sequences);
    v("stop_strings", stop_strings);
    v("include_stop_str_in_output", include_stop_str_in_output);
    v("logprobs", logprobs);
  }
};

}  // namespace roll::config
