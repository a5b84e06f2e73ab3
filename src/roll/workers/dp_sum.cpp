#include "roll/workers/dp_sum.h"

#include <ATen/ATen.h>

#include "roll/comm/process_group.h"

namespace roll::workers {

std::vector<double> dp_sum(const std::vector<double>& local, comm::ProcessGroup* group) {
  if (!group || group->size() <= 1 || local.empty()) return local;
  at::Tensor t = at::tensor(local, at::TensorOptions().dtype(at::kDouble));
  group->all_reduce(t);
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

}  // namespace roll::workers
