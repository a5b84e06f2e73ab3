#pragma once
// Grouping by non-tensor columns (ROLL's DataProto.group_by over strings such as traj_group_id, tags,
// state_hash). Groups are numbered in order of first appearance so results are deterministic.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace roll::rl {

// Non-tensor columns of a batch: name -> one string per sample.
using Columns = std::map<std::string, std::vector<std::string>, std::less<>>;

struct Groups {
  std::vector<int64_t> id;                    // group of each sample, 0..count-1
  std::vector<std::string> key;               // key of each group
  std::vector<std::vector<int64_t>> members;  // sample indices of each group, ascending
  int64_t count() const { return static_cast<int64_t>(key.size()); }
  at::Tensor id_tensor() const;               // int64 [B]
};

Groups group_by(const std::vector<std::string>& keys);
// The column named `name`, checked to have `batch_size` entries. Unknown names are an error naming the
// key and the columns that exist (ROLL: KeyError "Grouping key 'x' ...").
const std::vector<std::string>& column(const Columns& columns, std::string_view name, int64_t batch_size);

// Per-group statistics of x [B] broadcast back to samples ([B] each).
at::Tensor group_mean(const at::Tensor& x, const Groups& g);
// Unbiased std per group; groups of one sample get 0.
at::Tensor group_std(const at::Tensor& x, const Groups& g);
// Group size per sample (as x's dtype).
at::Tensor group_size(const at::Tensor& x, const Groups& g);

}  // namespace roll::rl
