#include "roll/rl/tensor_utils.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"

namespace roll::rl {

at::Tensor pad_to_length(const at::Tensor& t, int64_t length, double pad_value, int64_t dim) {
  if (!t.defined()) throw Error("pad_to_length: tensor is missing");
  if (length < 0) throw Error(fmt::format("pad_to_length: negative length {}", length));
  int64_t d = dim < 0 ? dim + t.dim() : dim;
  if (d < 0 || d >= t.dim())
    throw Error(fmt::format("pad_to_length: dim {} out of range for shape {}", dim, detail::shape_str(t)));
  if (t.size(d) >= length) return t.narrow(d, 0, length);
  std::vector<int64_t> pad_shape(t.sizes().begin(), t.sizes().end());
  pad_shape[d] = length - t.size(d);
  return at::cat({t, at::full(pad_shape, pad_value, t.options())}, d);
}

std::vector<at::Tensor> divide_by_chunk_size(const at::Tensor& t, const std::vector<int64_t>& sizes) {
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s <= 0) throw Error(fmt::format("divide_by_chunk_size: chunk sizes must be positive integers, got {}", s));
    total += s;
  }
  if (!t.defined() || t.dim() == 0 || total != t.size(0))
    throw Error(fmt::format("divide_by_chunk_size: the sum of chunk_sizes ({}) does not match the size of the "
                            "array ({})",
                            total, t.defined() && t.dim() ? t.size(0) : 0));
  std::vector<at::Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(t.narrow(0, start, s));
    start += s;
  }
  return out;
}

}  // namespace roll::rl
