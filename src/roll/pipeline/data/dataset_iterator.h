#pragma once
// The order in which a domain's prompts are drawn (ROLL's DynamicSamplingScheduler
// get_next_dataset_item): epoch e visits every row once in an order shuffled from seed + e, then
// epoch e + 1 begins. dataset_iter_count (rows drawn so far) is the whole state: restore(n) puts the
// iterator exactly where it was after n draws, so a resumed run draws the same prompts as an
// uninterrupted one.
//
// Differences from ROLL (docs/data.md): the shuffle is rollcpp's seeded Fisher-Yates, not Python's
// random.shuffle; each epoch shuffles the rows 0..n-1 afresh instead of reshuffling the previous
// epoch's order in place; and restoring keeps the position (ROLL replays the draws, then resets its
// epoch and iterator, so a resumed run starts a new shuffle from epoch 0).
#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace roll::pipeline {

class DatasetIterator {
 public:
  // size >= 1 rows (roll::Error otherwise).
  DatasetIterator(int64_t size, int64_t seed);

  int64_t next();                         // a row index in [0, size)
  std::vector<int64_t> next(int64_t n);   // n draws (may cross epochs)

  int64_t size() const { return size_; }
  int64_t dataset_iter_count() const { return count_; }
  int64_t epoch() const { return count_ / size_; }

  void restore(int64_t dataset_iter_count);  // >= 0 (roll::Error otherwise)
  // {"dataset_iter_count": n}, the scheduler state ROLL keeps in WorkerState.kv.
  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);  // roll::Error naming the key when malformed

  // The row order of one epoch.
  static std::vector<int64_t> epoch_order(int64_t size, int64_t seed, int64_t epoch);

 private:
  int64_t size_;
  int64_t seed_;
  int64_t count_ = 0;
  int64_t order_epoch_ = -1;  // the epoch order_ holds
  std::vector<int64_t> order_;
};

}  // namespace roll::pipeline
