#include "roll/workers/metrics_json.h"

#include <fmt/format.h>

#include <numeric>

#include "roll/core/error.h"

namespace roll::workers {
namespace {

std::string prefix_of(std::string_view source) { return source.empty() ? "" : fmt::format("{}: ", source); }

void flatten(const nlohmann::json& v, std::string_view source, const std::string& key, std::vector<double>& out) {
  if (v.is_number()) {
    out.push_back(v.get<double>());
  } else if (v.is_array()) {
    for (const auto& x : v) flatten(x, source, key, out);
  } else {
    throw Error(fmt::format("{}metric '{}' holds {} where numbers were expected", prefix_of(source), key, v.dump()));
  }
}

}  // namespace

nlohmann::json metrics_to_json(const rl::MetricMap& metrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, values] : metrics.values()) out[key] = values;
  return out;
}

rl::MetricMap metrics_from_json(const nlohmann::json& metrics, std::string_view source) {
  if (!metrics.is_object())
    throw Error(fmt::format("{}metrics must be an object, got {}", prefix_of(source), metrics.dump()));
  rl::MetricMap out;
  for (const auto& [key, v] : metrics.items()) {
    std::vector<double> values;
    flatten(v, source, key, values);
    out.add(key, values);
  }
  return out;
}

rl::MetricMap average_sum_metrics(const rl::MetricMap& metrics, int64_t backward_steps) {
  rl::MetricMap out;
  for (const auto& [key, values] : metrics.values()) {
    if (!key.ends_with("@sum")) {
      out.add(key, values);
      continue;
    }
    const double total = std::accumulate(values.begin(), values.end(), 0.0);
    out.add(key, backward_steps > 0 ? total / static_cast<double>(backward_steps) : total);
  }
  return out;
}

}  // namespace roll::workers
