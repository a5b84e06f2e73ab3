#include "roll/rl/query_filter.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"

namespace roll::rl {

QueryFilterType parse_query_filter_type(std::string_view name) {
  if (name == "no_filter") return QueryFilterType::no_filter;
  if (name == "mean_filter") return QueryFilterType::mean_filter;
  if (name == "std_filter") return QueryFilterType::std_filter;
  throw Error(fmt::format("query_filter_config.type '{}' is not known; use no_filter, mean_filter or std_filter",
                          name));
}

bool keep_query(const at::Tensor& rewards, const QueryFilterParams& p) {
  if (p.type == QueryFilterType::no_filter) return true;
  detail::check_dims(rewards, "response_level_rewards", {-1});
  detail::check_finite(rewards, "response_level_rewards");
  if (rewards.numel() == 0) throw Error("query filter: a prompt with no responses");
  at::Tensor r = rewards.to(at::kDouble);
  if (p.type == QueryFilterType::mean_filter) {
    double mean = r.mean().item<double>();
    return !(mean <= p.threshold_down || mean >= p.threshold_up);
  }
  if (r.numel() < 2) return true;
  return !(r.std().item<double>() <= p.std_threshold);
}

}  // namespace roll::rl
