#include "roll/workers/trim_padding.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace roll::workers {
namespace {

at::Tensor pad_right(const at::Tensor& t, int64_t width) {
  if (!t.defined() || t.size(1) == width) return t;
  return at::constant_pad_nd(t, {0, width - t.size(1)}, 0);
}

}  // namespace

int64_t lm_head_chunk_tokens(const model::ModelConfig& config) {
  const int64_t per_token = std::max<int64_t>(1, config.vocab_size) * 4;
  return std::clamp<int64_t>((int64_t{64} << 20) / per_token, 8, 1024);
}

int64_t used_columns(const at::Tensor& attention_mask) {
  const int64_t S = attention_mask.size(1);
  at::Tensor any = (attention_mask != 0).any(0);  // [S]
  at::Tensor cols = at::nonzero(any);
  const int64_t last = cols.numel() ? cols.max().item<int64_t>() : 0;
  return std::min(S, std::max<int64_t>(2, last + 1));
}

model::TokenLogProbs log_probs_on_used_columns(const TokenForward& forward, const at::Tensor& input_ids,
                                               const at::Tensor& attention_mask, const at::Tensor& position_ids,
                                               const at::Tensor& needed) {
  const int64_t S = input_ids.size(1);
  const int64_t L = used_columns(attention_mask);
  if (L == S) return forward(input_ids, attention_mask, position_ids, needed);
  auto cut = [&](const at::Tensor& t) { return t.slice(t.dim() - 1, 0, L); };
  at::Tensor needed_cut = needed.defined() ? needed.slice(1, 0, L - 1) : needed;
  model::TokenLogProbs out = forward(cut(input_ids), cut(attention_mask), cut(position_ids), needed_cut);
  out.log_probs = pad_right(out.log_probs, S - 1);
  out.entropy = pad_right(out.entropy, S - 1);
  return out;
}

at::Tensor values_on_used_columns(const std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>& forward,
                                  const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                  const at::Tensor& position_ids) {
  const int64_t S = input_ids.size(1);
  const int64_t L = used_columns(attention_mask);
  if (L == S) return forward(input_ids, attention_mask, position_ids);
  auto cut = [&](const at::Tensor& t) { return t.slice(t.dim() - 1, 0, L); };
  return pad_right(forward(cut(input_ids), cut(attention_mask), cut(position_ids)), S);
}

}  // namespace roll::workers
