#pragma once
// Which dtypes a backend can reduce. Gloo has no bfloat16 or int16 kernels and, handed one, fails
// on its worker thread where the error cannot be caught (the process aborts). So every reduction
// is checked here first and refused with an error the caller can handle; data movement
// (broadcast, all-gather) of such dtypes travels as raw bytes instead.
#include <ATen/core/Tensor.h>

#include <string>

namespace roll::comm {

// True when `backend` ("gloo", "nccl", "hccl") has a reduction kernel for `dtype`.
bool backend_reduces(const std::string& backend, at::ScalarType dtype);
// Throws roll::Error naming the operation, dtype and the fix (reduce in fp32) when it has none.
void check_reducible(const std::string& backend, const at::Tensor& t, const char* op);
// True when `backend` can move `dtype` natively (Gloo: the dtypes it reduces).
bool backend_moves(const std::string& backend, at::ScalarType dtype);
// A flat uint8 view of a contiguous tensor's bytes (shares its storage).
at::Tensor byte_view(const at::Tensor& t);

}  // namespace roll::comm
