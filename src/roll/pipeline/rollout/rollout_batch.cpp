#include "roll/pipeline/rollout/rollout_batch.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>

#include "roll/core/error.h"
#include "roll/model/tokenizer.h"

namespace roll::pipeline {

Batch build_rollout_batch(const Batch& prompts, const std::vector<GeneratedPrompt>& generated, int64_t S,
                          int64_t prompt_length, int32_t pad_id, const model::Tokenizer& tokenizer) {
  if (static_cast<int64_t>(generated.size()) != prompts.size())
    throw Error("rollout: generations do not match the prompts");
  int64_t rows = 0;
  for (const auto& g : generated) rows += static_cast<int64_t>(g.samples.size());
  const int64_t R = S - prompt_length;
  at::Tensor input_ids = at::full({rows, S}, pad_id, at::kLong);
  at::Tensor attention = at::zeros({rows, S}, at::kLong);
  at::Tensor response_mask = at::zeros({rows, S}, at::kLong);
  at::Tensor prompt_mask = at::zeros({rows, S}, at::kLong);
  at::Tensor responses = at::full({rows, std::max<int64_t>(R, 0)}, pad_id, at::kLong);
  at::Tensor infer_lp = at::zeros({rows, S - 1}, at::kFloat);
  at::Tensor versions = at::full({rows, S - 1}, -1, at::kLong);
  auto ids_a = input_ids.accessor<int64_t, 2>();
  auto att_a = attention.accessor<int64_t, 2>();
  auto rm_a = response_mask.accessor<int64_t, 2>();
  auto pm_a = prompt_mask.accessor<int64_t, 2>();
  auto resp_a = responses.accessor<int64_t, 2>();
  auto lp_a = infer_lp.accessor<float, 2>();
  auto ver_a = versions.accessor<int64_t, 2>();

  std::vector<int64_t> source_row;
  NonTensorColumn prompt_text, response_text, finish, uuid, prompt_id;
  int64_t r = 0;
  for (size_t i = 0; i < generated.size(); ++i) {
    const auto& g = generated[i];
    const int64_t plen = std::min<int64_t>(static_cast<int64_t>(g.prompt.size()), S);
    const std::string ptext = tokenizer.decode(g.prompt, false);
    for (size_t j = 0; j < g.samples.size(); ++j, ++r) {
      const auto& s = g.samples[j];
      for (int64_t t = 0; t < plen; ++t) {
        ids_a[r][t] = g.prompt[t];
        att_a[r][t] = 1;
        pm_a[r][t] = 1;
      }
      const int64_t rlen = std::min<int64_t>(static_cast<int64_t>(s.token_ids.size()), S - plen);
      for (int64_t k = 0; k < rlen; ++k) {
        ids_a[r][plen + k] = s.token_ids[k];
        att_a[r][plen + k] = 1;
        rm_a[r][plen + k] = 1;
        if (k < R) resp_a[r][k] = s.token_ids[k];
        if (k < static_cast<int64_t>(s.logprobs.size()) && plen - 1 + k < S - 1) lp_a[r][plen - 1 + k] = s.logprobs[k];
        if (k < static_cast<int64_t>(s.weight_versions.size()) && plen - 1 + k < S - 1)
          ver_a[r][plen - 1 + k] = s.weight_versions[k];
      }
      source_row.push_back(static_cast<int64_t>(i));
      prompt_text.push_back(ptext);
      response_text.push_back(tokenizer.decode(std::vector<int32_t>(s.token_ids.begin(), s.token_ids.begin() + rlen), false));
      finish.push_back(roll::to_string(s.finish_reason));
      uuid.push_back(fmt::format("{}-{}", i, j));
      prompt_id.push_back(static_cast<int64_t>(i));
    }
  }
  // Prompt columns (tensors and cells) repeated per sample.
  Batch out = prompts.take(source_row);
  out.set_tensor("prompts", out.has_tensor("input_ids") ? out.tensor("input_ids").clone() : at::empty({rows, 0}, at::kLong));
  out.set_tensor("input_ids", input_ids);
  out.set_tensor("attention_mask", attention);
  out.set_tensor("position_ids", at::clamp_min(at::cumsum(attention, 1) - 1, 0));
  out.set_tensor("response_mask", response_mask);
  out.set_tensor("prompt_mask", prompt_mask);
  out.set_tensor("responses", responses);
  out.set_tensor("infer_logprobs", infer_lp);
  out.set_tensor("infer_weight_versions", versions);
  out.set_column("prompt_text", std::move(prompt_text));
  out.set_column("response_text", std::move(response_text));
  out.set_column("finish_reason", std::move(finish));
  out.set_column("sample_uuid", std::move(uuid));
  out.set_column("prompt_id", std::move(prompt_id));
  return out;
}

void number_prompts(Batch& samples, int64_t n) {
  if (n < 1 || samples.size() % n != 0)
    throw Error(fmt::format("rollout: {} rows are not prompts of {} samples", samples.size(), n));
  NonTensorColumn uuid, prompt_id;
  for (int64_t r = 0; r < samples.size(); ++r) {
    uuid.push_back(fmt::format("{}-{}", r / n, r % n));
    prompt_id.push_back(r / n);
  }
  samples.set_column("sample_uuid", std::move(uuid));
  samples.set_column("prompt_id", std::move(prompt_id));
}

Batch concat_domains(std::vector<Batch> parts) {
  std::vector<std::string> all;
  for (const auto& p : parts)
    for (const auto& k : p.column_keys())
      if (std::find(all.begin(), all.end(), k) == all.end()) all.push_back(k);
  for (auto& p : parts)
    for (const auto& k : all)
      if (!p.has_column(k)) p.set_column(k, NonTensorColumn(static_cast<size_t>(p.size()), Cell(nullptr)));
  // Same column order everywhere, as concat compares them.
  for (auto& p : parts) p = p.select(p.tensor_keys(), all);
  return Batch::concat(parts);
}

}  // namespace roll::pipeline
