#pragma once
// Counts summed over the data-parallel ranks of a role (the global loss normalisers of docs/rl.md).
#include <cstdint>
#include <string>
#include <vector>

namespace roll::comm {
class ProcessGroup;
}

namespace roll::workers {

// One all-reduce (sum, float64) of `local` over `group`; null group or one rank: `local` as is.
// Collective: every rank calls it with the same number of values.
std::vector<double> dp_sum(const std::vector<double>& local, comm::ProcessGroup* group);

// Every rank must train on as many rows (the same mini-batches, so the same collectives): ROLL's
// pipeline pads the batch to the DP size. One all-reduce of {rows, rows²}; all ranks reach the same
// verdict, so a mismatch is an error on every rank instead of a hang. Collective.
void check_equal_rows(int64_t rows, comm::ProcessGroup* group, const std::string& role);

}  // namespace roll::workers
