#pragma once
// Argument checks shared by the rl/ functions. Every failure is a roll::Error whose message names
// the tensor (or key) at fault and its shape, so a caller never has to read our code to find it.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace roll::rl::detail {

std::string shape_str(const at::Tensor& t);

// `t` must be defined with exactly dims.size() dimensions; a dim of -1 matches any size.
void check_dims(const at::Tensor& t, std::string_view name, std::initializer_list<int64_t> dims);
void check_same_shape(const at::Tensor& a, std::string_view a_name, const at::Tensor& b,
                      std::string_view b_name);
// NaN or +-inf anywhere in `t` is an error naming the first bad index.
void check_finite(const at::Tensor& t, std::string_view name);
// A mask of any dtype (bool, int, float) as the floating dtype of `like`.
at::Tensor as_mask(const at::Tensor& mask, const at::Tensor& like);

}  // namespace roll::rl::detail
