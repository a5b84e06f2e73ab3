#include "roll/pipeline/data/prompt_collator.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>

#include "roll/core/error.h"

namespace roll::pipeline {

Batch collate_prompts(const std::vector<PromptSample>& samples, int64_t max_length, int32_t pad_id) {
  if (samples.empty()) throw Error("collate_prompts: no rows to collate");
  const auto batch = static_cast<int64_t>(samples.size());
  at::Tensor input_ids = at::full({batch, max_length}, static_cast<int64_t>(pad_id), at::kLong);
  at::Tensor attention_mask = at::zeros({batch, max_length}, at::kLong);
  at::Tensor position_ids = at::zeros({batch, max_length}, at::kLong);
  auto ids = input_ids.accessor<int64_t, 2>();
  auto mask = attention_mask.accessor<int64_t, 2>();
  auto pos = position_ids.accessor<int64_t, 2>();
  for (int64_t b = 0; b < batch; ++b) {
    const auto& tokens = *samples[static_cast<size_t>(b)].input_ids;
    const auto n = static_cast<int64_t>(tokens.size());
    if (n > max_length)
      throw Error(fmt::format("collate_prompts: row {} has {} tokens, more than the padded length {}", b, n, max_length));
    const int64_t offset = max_length - n;  // left padding
    for (int64_t t = 0; t < n; ++t) {
      ids[b][offset + t] = tokens[static_cast<size_t>(t)];
      mask[b][offset + t] = 1;
      pos[b][offset + t] = t;  // cumsum(mask) - 1 on the tokens, clipped to 0 on the padding
    }
  }

  Batch out(batch);
  // Non-tensor columns in order of first appearance.
  std::vector<std::string> keys;
  for (const auto& s : samples)
    if (s.fields && s.fields->is_object())
      for (const auto& [key, value] : s.fields->items())
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  for (const auto& key : keys) {
    NonTensorColumn column;
    column.reserve(samples.size());
    for (const auto& s : samples) {
      const bool has = s.fields && s.fields->is_object() && s.fields->contains(key);
      column.push_back(has ? (*s.fields)[key] : Cell());
    }
    out.set_column(key, std::move(column));
  }
  out.set_tensor("input_ids", input_ids);
  out.set_tensor("attention_mask", attention_mask);
  out.set_tensor("position_ids", position_ids);
  return out;
}

}  // namespace roll::pipeline
