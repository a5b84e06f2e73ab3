#include "roll/rl/grouping.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <unordered_map>

#include "roll/core/error.h"

namespace roll::rl {

at::Tensor Groups::id_tensor() const {
  return at::tensor(at::ArrayRef<int64_t>(id), at::TensorOptions().dtype(at::kLong)).clone();
}

Groups group_by(const std::vector<std::string>& keys) {
  Groups g;
  std::unordered_map<std::string_view, int64_t> index;
  g.id.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = index.emplace(keys[i], g.count());
    if (inserted) {
      g.key.push_back(keys[i]);
      g.members.emplace_back();
    }
    g.id.push_back(it->second);
    g.members[it->second].push_back(static_cast<int64_t>(i));
  }
  return g;
}

const std::vector<std::string>& column(const Columns& columns, std::string_view name, int64_t batch_size) {
  auto it = columns.find(name);
  if (it == columns.end()) {
    std::string have;
    for (const auto& [k, v] : columns) have += (have.empty() ? "" : ", ") + k;
    throw Error(fmt::format("Grouping key '{}' is not a column of the batch (columns: {})", name,
                            have.empty() ? "none" : have));
  }
  if (static_cast<int64_t>(it->second.size()) != batch_size)
    throw Error(fmt::format("column '{}' has {} entries but the batch has {} samples", name, it->second.size(),
                            batch_size));
  return it->second;
}

namespace {

at::Tensor per_group_sum(const at::Tensor& x, const at::Tensor& ids, int64_t count) {
  return at::zeros({count}, x.options()).index_add(0, ids, x);
}

}  // namespace

at::Tensor group_size(const at::Tensor& x, const Groups& g) {
  at::Tensor ids = g.id_tensor();
  return per_group_sum(at::ones_like(x), ids, g.count()).index_select(0, ids);
}

at::Tensor group_mean(const at::Tensor& x, const Groups& g) {
  at::Tensor ids = g.id_tensor();
  at::Tensor n = per_group_sum(at::ones_like(x), ids, g.count());
  return (per_group_sum(x, ids, g.count()) / n).index_select(0, ids);
}

at::Tensor group_std(const at::Tensor& x, const Groups& g) {
  at::Tensor ids = g.id_tensor();
  at::Tensor n = per_group_sum(at::ones_like(x), ids, g.count());
  at::Tensor mean = (per_group_sum(x, ids, g.count()) / n).index_select(0, ids);
  at::Tensor ss = per_group_sum((x - mean).pow(2), ids, g.count());
  at::Tensor var = at::where(n > 1, ss / (n - 1).clamp_min(1), at::zeros_like(ss));
  return var.sqrt().index_select(0, ids);
}

}  // namespace roll::rl
