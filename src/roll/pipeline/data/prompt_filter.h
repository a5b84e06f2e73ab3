#pragma once
// The RLVR query filter of one domain (docs/rl.md, `rewards.<d>.query_filter_config`) read from the
// config, and applied to a batch of scored samples (n contiguous rows per prompt). The per-prompt
// rule itself is rl::keep_query (rl/query_filter.h).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "roll/rl/query_filter.h"

namespace roll::config {
struct QueryFilterConfig;
}

namespace roll::pipeline {

// type no_filter | mean_filter (filter_args threshold_up, threshold_down) | std_filter
// (std_threshold). A filter_args key the type does not read, or a value that is not a number, is a
// roll::ConfigError whose message names `<key>.filter_args.<arg>`; key is e.g.
// "rewards.math_rule.query_filter_config".
rl::QueryFilterParams query_filter_params(const config::QueryFilterConfig& config, const std::string& key);

// One flag per prompt: keep_query over the rewards of rows [i*n, (i+1)*n). scores: [P*n].
std::vector<bool> keep_prompts(const at::Tensor& scores, int64_t n, const rl::QueryFilterParams& params);

// "mean_filter(threshold_down=0, threshold_up=1)", for logs and errors.
std::string describe(const rl::QueryFilterParams& params);

}  // namespace roll::pipeline

namespace roll::pipeline {

// The roll::Error of a step whose prompts ran out (one pass over the domain's `rows`) before
// `batch_size` of them passed the filter at `key`: ROLL keeps drawing forever.
[[noreturn]] void throw_batch_not_filled(const std::string& domain, int64_t passed, int64_t batch_size, int64_t drawn,
                                         int64_t rows, const rl::QueryFilterParams& params, const std::string& key);

}  // namespace roll::pipeline
