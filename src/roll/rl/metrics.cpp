#include "roll/rl/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "roll/core/error.h"

namespace roll::rl {
namespace {

bool tag_from_name(std::string_view tag, Reducer* out) {
  static const std::pair<std::string_view, Reducer> kTags[] = {
      {"mean", Reducer::mean}, {"max", Reducer::max}, {"min", Reducer::min}, {"p50", Reducer::p50},
      {"p99", Reducer::p99},   {"std", Reducer::std}, {"sum", Reducer::sum}};
  for (const auto& [name, r] : kTags) {
    if (tag == name) {
      *out = r;
      return true;
    }
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// numpy.percentile with the default "linear" method.
double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

}  // namespace

Reducer reducer_for(std::string_view key) {
  Reducer r = Reducer::mean;
  size_t at = key.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view tag = trim(key.substr(at + 1));
    if (!tag_from_name(tag, &r))
      throw Error(fmt::format("metric '{}': unknown reducer tag '@{}' (known: mean, max, min, p50, p99, std, sum)",
                              key, tag));
    return r;
  }
  // ROLL checks the underscore suffixes in this order; the first match wins.
  for (std::string_view suffix : {"mean", "max", "min", "p50", "p99", "std", "sum"}) {
    if (key.size() > suffix.size() && key.substr(key.size() - suffix.size()) == suffix &&
        key[key.size() - suffix.size() - 1] == '_') {
      tag_from_name(suffix, &r);
      return r;
    }
  }
  return Reducer::mean;
}

double reduce_values(const std::vector<double>& v, Reducer reducer) {
  if (v.empty()) throw Error("reduce_values: empty list of metric values");
  switch (reducer) {
    case Reducer::sum:
      return std::accumulate(v.begin(), v.end(), 0.0);
    case Reducer::mean:
      return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    case Reducer::max:
      return *std::max_element(v.begin(), v.end());
    case Reducer::min:
      return *std::min_element(v.begin(), v.end());
    case Reducer::p50:
      return percentile(v, 50.0);
    case Reducer::p99:
      return percentile(v, 99.0);
    case Reducer::std: {
      double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      double ss = 0.0;
      for (double x : v) ss += (x - mean) * (x - mean);
      return std::sqrt(ss / static_cast<double>(v.size()));
    }
  }
  return 0.0;
}

std::string strip_metric_tag(std::string_view key) {
  size_t at = key.rfind('@');
  return std::string(at == std::string_view::npos ? key : key.substr(0, at));
}

std::map<std::string, double> strip_metric_tags(const std::map<std::string, double>& metrics) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : metrics) out[strip_metric_tag(k)] = v;
  return out;
}

void MetricMap::add(const std::string& key, const std::vector<double>& values) {
  auto& dst = values_[key];
  dst.insert(dst.end(), values.begin(), values.end());
}

void MetricMap::merge(const MetricMap& other) {
  for (const auto& [k, v] : other.values_) add(k, v);
}

void MetricMap::merge_prefixed(const MetricMap& other, std::string_view prefix) {
  for (const auto& [k, v] : other.values_) add(std::string(prefix) + k, v);
}

const std::vector<double>& MetricMap::at(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw Error(fmt::format("metric '{}' was not recorded", key));
  return it->second;
}

std::map<std::string, double> MetricMap::reduce() const {
  std::map<std::string, double> out;
  for (const auto& [k, v] : values_) {
    if (v.empty()) continue;
    out[k] = reduce_values(v, reducer_for(k));
  }
  return out;
}

}  // namespace roll::rl
