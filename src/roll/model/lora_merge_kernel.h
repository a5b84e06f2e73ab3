#pragma once
// The CPU kernel behind lora_merge_into (model/lora.h): out = W + scale * B A for one module, in
// one pass over W and out. A LoRA weight sync runs it on every adapted module of the engine, so
// it has to run at the memory's speed: the rank-r product is formed tile by tile in fp32
// registers and added to the widened base there, and out is rounded once to its dtype (bf16:
// nearest, ties to even). No [out, in] temporary is written.
#include <ATen/core/Tensor.h>

#include <vector>

namespace roll::model {

enum class LoraMergeKernel {
  kPortable,  // plain loops, any CPU
  kAvx2,      // 4 rows x 24 columns of fp32 FMA accumulators per tile
};

// The fastest kernel this CPU runs.
LoraMergeKernel best_lora_merge_kernel();

// Whether the CPU kernel takes these tensors: CPU, contiguous, W and out both fp32 or both bf16.
bool lora_merge_kernel_applies(const at::Tensor& out, const at::Tensor& w);

// out [rows, cols] = w + scale * b [rows, rank] x a [rank, cols]. `a` and `b` in any floating
// dtype (widened to fp32 once), shapes already checked by the caller; rows run in parallel.
void lora_merge_cpu(const at::Tensor& out, const at::Tensor& w, const at::Tensor& a, const at::Tensor& b, double scale,
                    LoraMergeKernel kernel = best_lora_merge_kernel());

// Many modules in one parallel region (a weight sync): each job as above.
struct LoraMergeJob {
  at::Tensor out, w, a, b;
  double scale;
};
void lora_merge_cpu(const std::vector<LoraMergeJob>& jobs, LoraMergeKernel kernel = best_lora_merge_kernel());

}  // namespace roll::model
