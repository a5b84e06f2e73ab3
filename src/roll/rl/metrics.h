#pragma once
// Metric collection with ROLL's reduction rules (roll/utils/functionals.py: reduce_metrics).
// A metric is a list of values (one per micro-batch, worker, step...). Reduction picks the reducer from
// the key: an "@tag" suffix (loss@sum, ratio_max@max) wins, else an "_tag" suffix (foo_sum, bar_p99),
// else the mean. Trackers log the key without its "@tag" (strip_metric_tag).
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace roll::rl {

enum class Reducer { mean, max, min, p50, p99, std, sum };

// The reducer a key asks for. An unknown "@tag" is an error naming the key (as ROLL raises).
Reducer reducer_for(std::string_view key);
// numpy semantics: std is the population std (ddof 0); p50/p99 interpolate linearly.
double reduce_values(const std::vector<double>& values, Reducer reducer);
// "actor/pg_loss@sum" -> "actor/pg_loss"; only the last "@..." is removed.
std::string strip_metric_tag(std::string_view key);
std::map<std::string, double> strip_metric_tags(const std::map<std::string, double>& metrics);

// Ordered map key -> list of values. Sorted by key so output is deterministic across workers.
class MetricMap {
 public:
  using Map = std::map<std::string, std::vector<double>>;

  void add(const std::string& key, double value) { values_[key].push_back(value); }
  void add(const std::string& key, const std::vector<double>& values);
  // Appends every list of `other` (ROLL's DataProto.concat of the "metrics" global key).
  void merge(const MetricMap& other);
  // Same as merge, with `prefix` put in front of every key (per-domain metrics: "<domain>/").
  void merge_prefixed(const MetricMap& other, std::string_view prefix);

  bool contains(const std::string& key) const { return values_.count(key) != 0; }
  // The list under `key`; an error naming the key when absent.
  const std::vector<double>& at(const std::string& key) const;
  // Convenience for single-valued metrics: the last value under `key`.
  double last(const std::string& key) const { return at(key).back(); }
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  const Map& values() const { return values_; }

  // One number per key by the rules above; empty lists are left out.
  std::map<std::string, double> reduce() const;

 private:
  Map values_;
};

}  // namespace roll::rl
