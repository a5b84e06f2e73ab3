#include "roll/pipeline/data/prompt_filter.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <map>

#include "roll/config/node_json.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"

namespace roll::pipeline {

rl::QueryFilterParams query_filter_params(const config::QueryFilterConfig& c, const std::string& key) {
  rl::QueryFilterParams p;
  try {
    p.type = rl::parse_query_filter_type(c.type);
  } catch (const Error& e) {
    throw ConfigError(key + ".type", key + ".type: " + e.what());
  }
  // The filter_args each type reads (ROLL reads them with defaults and ignores the rest; a key we
  // would ignore is most likely a typo, so it is an error here).
  std::map<std::string, double*> args;
  if (p.type == rl::QueryFilterType::mean_filter) args = {{"threshold_up", &p.threshold_up}, {"threshold_down", &p.threshold_down}};
  if (p.type == rl::QueryFilterType::std_filter) args = {{"std_threshold", &p.std_threshold}};
  const nlohmann::ordered_json j = config::to_json(c.filter_args);
  if (j.is_null()) return p;
  if (!j.is_object())
    throw ConfigError(key + ".filter_args", fmt::format("{}.filter_args must be a mapping, got {}", key, j.dump()));
  for (const auto& [name, value] : j.items()) {
    const std::string k = key + ".filter_args." + name;
    auto it = args.find(name);
    if (it == args.end()) {
      std::string known;
      for (const auto& [a, _] : args) known += (known.empty() ? "" : ", ") + a;
      throw ConfigError(k, fmt::format("{}: {} reads no '{}' (it reads: {})", k, c.type, name,
                                       known.empty() ? "nothing" : known));
    }
    if (!value.is_number())
      throw ConfigError(k, fmt::format("{} must be a number, got {}", k, value.dump()));
    *it->second = value.get<double>();
  }
  return p;
}

std::vector<bool> keep_prompts(const at::Tensor& scores, int64_t n, const rl::QueryFilterParams& params) {
  if (n < 1) throw Error(fmt::format("query filter: {} samples per prompt", n));
  if (scores.dim() != 1 || scores.numel() % n != 0)
    throw Error(fmt::format("query filter: scores of {} elements are not prompts of {} samples", scores.numel(), n));
  const int64_t prompts = scores.numel() / n;
  std::vector<bool> keep(static_cast<size_t>(prompts));
  for (int64_t i = 0; i < prompts; ++i) keep[static_cast<size_t>(i)] = rl::keep_query(scores.slice(0, i * n, (i + 1) * n), params);
  return keep;
}

std::string describe(const rl::QueryFilterParams& p) {
  switch (p.type) {
    case rl::QueryFilterType::mean_filter:
      return fmt::format("mean_filter(threshold_down={}, threshold_up={})", p.threshold_down, p.threshold_up);
    case rl::QueryFilterType::std_filter:
      return fmt::format("std_filter(std_threshold={})", p.std_threshold);
    default:
      return "no_filter";
  }
}

}  // namespace roll::pipeline

namespace roll::pipeline {

void throw_batch_not_filled(const std::string& domain, int64_t passed, int64_t batch_size, int64_t drawn, int64_t rows,
                            const rl::QueryFilterParams& params, const std::string& key) {
  throw Error(fmt::format(
      "domain '{}': only {} of {} prompts passed the query filter {} ({}) after {} prompts drawn in the step (the "
      "limit is one pass over the domain's {} rows); loosen {}.filter_args or set {}.type=no_filter",
      domain, passed, batch_size, key, describe(params), drawn, rows, key, key));
}

}  // namespace roll::pipeline
