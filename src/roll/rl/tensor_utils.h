#pragma once
// Small batch-tensor helpers ROLL keeps in functionals.py (pad_to_length, divide_by_chunk_size).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace roll::rl {

// Truncates `t` to `length` along `dim`, or pads it with `pad_value` up to `length`.
at::Tensor pad_to_length(const at::Tensor& t, int64_t length, double pad_value, int64_t dim = -1);
// Splits dim 0 into consecutive chunks of the given sizes; the sizes must be positive and sum to size(0).
std::vector<at::Tensor> divide_by_chunk_size(const at::Tensor& t, const std::vector<int64_t>& chunk_sizes);

}  // namespace roll::rl
