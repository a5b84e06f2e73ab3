#include "roll/rl/check.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::rl::detail {

std::string shape_str(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i) s += ", ";
    s += std::to_string(t.size(i));
  }
  return s + "]";
}

void check_dims(const at::Tensor& t, std::string_view name, std::initializer_list<int64_t> dims) {
  if (!t.defined()) throw Error(fmt::format("rl: tensor '{}' is missing", name));
  bool ok = t.dim() == static_cast<int64_t>(dims.size());
  int64_t i = 0;
  for (int64_t d : dims) {
    if (!ok) break;
    if (d >= 0 && t.size(i) != d) ok = false;
    ++i;
  }
  if (ok) return;
  std::string want = "[";
  i = 0;
  for (int64_t d : dims) {
    if (i++) want += ", ";
    want += d < 0 ? std::string("*") : std::to_string(d);
  }
  want += "]";
  throw Error(fmt::format("rl: tensor '{}' has shape {}, expected {}", name, shape_str(t), want));
}

void check_same_shape(const at::Tensor& a, std::string_view a_name, const at::Tensor& b,
                      std::string_view b_name) {
  if (!a.defined()) throw Error(fmt::format("rl: tensor '{}' is missing", a_name));
  if (!b.defined()) throw Error(fmt::format("rl: tensor '{}' is missing", b_name));
  if (a.sizes() != b.sizes())
    throw Error(fmt::format("rl: tensor '{}' has shape {} but '{}' has shape {}; they must match",
                            a_name, shape_str(a), b_name, shape_str(b)));
}

void check_finite(const at::Tensor& t, std::string_view name) {
  if (!t.defined()) throw Error(fmt::format("rl: tensor '{}' is missing", name));
  if (!t.is_floating_point()) return;
  at::Tensor bad = at::logical_not(at::isfinite(t.detach()));
  if (!bad.any().item<bool>()) return;
  at::Tensor idx = bad.reshape({-1}).nonzero().select(1, 0);
  int64_t first = idx[0].item<int64_t>();
  double value = t.detach().reshape({-1})[first].item<double>();
  throw Error(fmt::format("rl: tensor '{}' (shape {}) has {} non-finite value(s); first at flat index {} = {}",
                          name, shape_str(t), idx.size(0), first, value));
}

at::Tensor as_mask(const at::Tensor& mask, const at::Tensor& like) {
  return mask.to(like.is_floating_point() ? like.scalar_type() : at::kFloat);
}

}  // namespace roll::rl::detail
