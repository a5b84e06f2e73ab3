#pragma once
// Counts summed over the data-parallel ranks of a role (the global loss normalisers of spec 3.8).
#include <vector>

namespace roll::comm {
class ProcessGroup;
}

namespace roll::workers {

// One all-reduce (sum, float64) of `local` over `group`; null group or one rank: `local` as is.
// Collective: every rank calls it with the same number of values.
std::vector<double> dp_sum(const std::vector<double>& local, comm::ProcessGroup* group);

}  // namespace roll::workers
