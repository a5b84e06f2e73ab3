#include "roll/pipeline/data/dataset_iterator.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "roll/core/error.h"
#include "roll/pipeline/data/shuffle.h"

namespace roll::pipeline {

DatasetIterator::DatasetIterator(int64_t size, int64_t seed) : size_(size), seed_(seed) {
  if (size < 1) throw Error(fmt::format("DatasetIterator: a dataset needs at least one row, got {}", size));
}

std::vector<int64_t> DatasetIterator::epoch_order(int64_t size, int64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  SeededRng rng(static_cast<uint64_t>(seed + epoch));
  shuffle_in_place(order, rng);
  return order;
}

int64_t DatasetIterator::next() {
  const int64_t e = epoch();
  if (e != order_epoch_) {
    order_ = epoch_order(size_, seed_, e);
    order_epoch_ = e;
  }
  return order_[static_cast<size_t>(count_++ % size_)];
}

std::vector<int64_t> DatasetIterator::next(int64_t n) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) out.push_back(next());
  return out;
}

void DatasetIterator::restore(int64_t dataset_iter_count) {
  if (dataset_iter_count < 0)
    throw Error(fmt::format("DatasetIterator: dataset_iter_count must be >= 0, got {}", dataset_iter_count));
  count_ = dataset_iter_count;
}

nlohmann::json DatasetIterator::state() const { return {{"dataset_iter_count", count_}}; }

void DatasetIterator::load_state(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("dataset_iter_count") || !state["dataset_iter_count"].is_number_integer())
    throw Error(fmt::format("scheduler state needs an integer \"dataset_iter_count\", got {}", state.dump()));
  restore(state["dataset_iter_count"].get<int64_t>());
}

}  // namespace roll::pipeline
