#pragma once
// Prompt-level dynamic filtering (docs/rl.md, RLVR `query_filter_config`): decides from the n
// response-level rewards of one prompt whether the prompt is kept (DAPO-style dynamic sampling).
#include <ATen/core/Tensor.h>

#include <limits>
#include <string_view>

namespace roll::rl {

enum class QueryFilterType { no_filter, mean_filter, std_filter };
QueryFilterType parse_query_filter_type(std::string_view name);

struct QueryFilterParams {
  QueryFilterType type = QueryFilterType::no_filter;
  double threshold_up = std::numeric_limits<double>::infinity();  // mean_filter filter_args
  double threshold_down = -1.0;
  double std_threshold = -1.0;  // std_filter filter_args
};

// mean_filter drops when mean <= threshold_down or mean >= threshold_up; std_filter drops when the
// unbiased std <= std_threshold. With a single response the std is undefined and the prompt is kept
// (ROLL compares NaN, which is false). rewards: [n]. NaN rewards are an error.
bool keep_query(const at::Tensor& rewards, const QueryFilterParams& params);

}  // namespace roll::rl
