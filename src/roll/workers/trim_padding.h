#pragma once
// Rows are right padded to sequence_length; columns past the longest row hold no token, yet a
// forward over them costs as much as over real tokens (the lm_head over the whole vocabulary
// dominates small models). These run the model on the used columns only and pad the outputs back
// with zeros (the masks are zero there), so results equal the full-width forward.
#include <ATen/core/Tensor.h>

#include <functional>

#include "roll/model/transformer.h"

namespace roll::workers {

// Rows of the LM head per chunk: 64 MiB of fp32 logits (110 rows of a 151936-token vocabulary),
// where the head's products run near the GEMM's speed; 27-row chunks (16 MiB) took 2.1-2.4x as
// long in forward and backward. The chunk's buffers are reused from the CPU block cache
// (core/cpu_block_cache.h), not faulted in afresh.
int64_t lm_head_chunk_tokens(const model::ModelConfig& config);

// 1 + the last column any row attends to (at least 2: one predicted token).
int64_t used_columns(const at::Tensor& attention_mask);

// `needed` [B, S-1] (optional): the positions whose log-probs are used, passed on cut to the
// used columns (the model then runs its LM head on those rows only).
using TokenForward = std::function<model::TokenLogProbs(const at::Tensor& ids, const at::Tensor& mask,
                                                        const at::Tensor& pos, const at::Tensor& needed)>;
model::TokenLogProbs log_probs_on_used_columns(const TokenForward& forward, const at::Tensor& input_ids,
                                               const at::Tensor& attention_mask, const at::Tensor& position_ids,
                                               const at::Tensor& needed = {});

// [B, S] per-position values (the critic head) over the used columns, zero-padded back to S.
at::Tensor values_on_used_columns(const std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>& forward,
                                  const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                  const at::Tensor& position_ids);

}  // namespace roll::workers
