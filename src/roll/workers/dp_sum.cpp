#include "roll/workers/dp_sum.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"

namespace roll::workers {

std::vector<double> dp_sum(const std::vector<double>& local, comm::ProcessGroup* group) {
  if (!group || group->size() <= 1 || local.empty()) return local;
  at::Tensor t = at::tensor(local, at::TensorOptions().dtype(at::kDouble));
  group->all_reduce(t);
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

void check_equal_rows(int64_t rows, comm::ProcessGroup* group, const std::string& role) {
  if (!group || group->size() <= 1) return;
  const double r = static_cast<double>(rows), n = static_cast<double>(group->size());
  const std::vector<double> g = dp_sum({r, r * r}, group);
  // Σ r² = (Σ r)² / n exactly when every rank has the same count.
  if (std::abs(g[1] * n - g[0] * g[0]) > 0.5)
    throw Error(fmt::format("{}: the data-parallel ranks got different numbers of rows ({} here, {} in all over {} "
                            "ranks); pad the batch to a multiple of the DP size",
                            role, rows, g[0], group->size()));
}

}  // namespace roll::workers
