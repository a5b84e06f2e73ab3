#include "roll/comm/collective_dtype.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::comm {

bool backend_reduces(const std::string& backend, at::ScalarType dtype) {
  if (backend == "gloo") {
    // ProcessGroupGloo's GENERATE_ALL_TYPES list.
    switch (dtype) {
      case at::kFloat:
      case at::kDouble:
      case at::kHalf:
      case at::kChar:
      case at::kByte:
      case at::kInt:
      case at::kLong:
        return true;
      default:
        return false;
    }
  }
  // NCCL/HCCL reduce every floating and integer dtype we use, bf16 included.
  return dtype != at::kBool && !at::isComplexType(dtype);
}

void check_reducible(const std::string& backend, const at::Tensor& t, const char* op) {
  if (!backend_reduces(backend, t.scalar_type()))
    throw Error(fmt::format("{} of a {} tensor on the {} backend: {} has no {} reduction (it would abort the "
                            "process); reduce a float32 copy instead",
                            op, c10::toString(t.scalar_type()), backend, backend, c10::toString(t.scalar_type())));
  if (!t.is_contiguous()) throw Error(fmt::format("{}: the tensor must be contiguous", op));
}

bool backend_moves(const std::string& backend, at::ScalarType dtype) { return backend_reduces(backend, dtype); }

at::Tensor byte_view(const at::Tensor& t) {
  if (!t.is_contiguous()) throw Error("byte_view: the tensor must be contiguous");
  // from_blob keeps `t` (and so its storage) alive through the deleter's capture.
  at::Tensor keep = t;
  return at::from_blob(
      t.data_ptr(), {static_cast<int64_t>(t.nbytes())}, [keep](void*) mutable { keep.reset(); },
      t.options().dtype(at::kByte));
}

}  // namespace roll::comm
