#include "roll/engine/engine_config.h"

#include <fmt/format.h>

#include "roll/config/diagnostics.h"
#include "roll/config/scalar_read.h"
#include "roll/core/error.h"

namespace roll::engine {

void apply_strategy_config(const config::NodePtr& sc, const std::string& prefix, EngineConfig& c,
                           std::vector<std::string>* ignored) {
  if (!sc || sc->is_null()) return;
  if (!sc->is_map()) throw ConfigError(prefix, fmt::format("{} must be a mapping, got a {}", prefix, sc->kind_name()));
  config::Diagnostics diag;
  for (const auto& [key, node] : sc->entries()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    int64_t i = 0;
    double d = 0;
    bool b = false;
    if (key == "gpu_memory_utilization" || key == "mem_fraction_static") {
      if (config::read_double(node, path, d, diag)) {
        if (!(d > 0 && d <= 1)) diag.error(path, fmt::format("{} must be in (0, 1], got {}", path, d));
        c.gpu_memory_utilization = d;
      }
    } else if (key == "block_size" || key == "max_model_len" || key == "max_num_batched_tokens" ||
               key == "max_num_seqs" || key == "num_gpu_blocks_override" || key == "seed") {
      if (!config::read_int(node, path, i, diag)) continue;
      if (i <= 0 && key != "seed") {
        diag.error(path, fmt::format("{} must be positive, got {}", path, i));
        continue;
      }
      if (key == "block_size") c.block_size = i;
      else if (key == "max_model_len") c.max_model_len = i;
      else if (key == "max_num_batched_tokens") c.max_num_batched_tokens = i;
      else if (key == "max_num_seqs") c.max_num_seqs = i;
      else if (key == "num_gpu_blocks_override") c.num_blocks = i;
      else c.seed = static_cast<uint64_t>(i);
    } else if (key == "enable_prefix_caching") {
      if (config::read_bool(node, path, b, diag)) c.enable_prefix_caching = b;
    } else if (key == "tensor_parallel_size" || key == "pipeline_parallel_size" || key == "tp_size") {
      // The engine holds one whole replica per worker; config/derive.cpp turns a TP/PP layout into
      // one worker per device and warns.
      config::read_int(node, path, i, diag);
    } else if (ignored) {
      ignored->push_back(path);
    }
  }
  diag.throw_if_errors();
}

}  // namespace roll::engine
