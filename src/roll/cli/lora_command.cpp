// `roll lora merge`: fold a PEFT LoRA adapter into its base model and write an HF directory.
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/model/hf_config.h"
#include "roll/model/lora.h"
#include "roll/model/model_dir_files.h"
#include "roll/model/transformer.h"

namespace roll::cli {
namespace {

struct MergeOptions {
  std::string model, adapter, out;
};

void merge(const MergeOptions& o) {
  const model::PeftAdapter adapter = model::load_peft_adapter(o.adapter);
  const std::string base = o.model.empty() ? adapter.base_model : o.model;
  if (base.empty())
    throw Error(fmt::format("{}: adapter_config.json names no base model; pass --model", o.adapter));
  // The merged model keeps the base's stored dtype.
  const model::ModelConfig c = model::ModelConfig::load((std::filesystem::path(base) / "config.json").string());
  const at::ScalarType dtype = c.torch_dtype == "bfloat16" ? at::kBFloat16 : at::kFloat;
  auto m = model::Transformer::load(base, dtype);
  m->add_lora(adapter.config, 0);
  m->load_adapters(adapter.adapters);
  const size_t modules = m->adapters().size() / 2;
  m->merge_adapters();
  m->save(o.out);
  model::copy_tokenizer_files(base, o.out);
  std::cout << fmt::format("wrote {}: {} with the rank-{} adapter of {} merged into {} modules\n", o.out, base,
                           adapter.config.rank, o.adapter, modules);
}

}  // namespace

void register_lora(CLI::App& app) {
  auto* lora = app.add_subcommand("lora", "LoRA adapters (PEFT format)");
  lora->require_subcommand(1);
  auto opts = std::make_shared<MergeOptions>();
  auto* m = lora->add_subcommand("merge", "Write base + (alpha / r) B A as a full HF model directory");
  m->add_option("--model", opts->model, "Base model directory (default: the adapter's base_model_name_or_path)");
  m->add_option("--adapter", opts->adapter, "Adapter directory (adapter_config.json, adapter_model.safetensors)")
      ->required();
  m->add_option("--out,-o", opts->out, "Output directory")->required();
  m->callback([opts] {
    try {
      at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      merge(*opts);
      set_exit_code(0);
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
