#pragma once
// ROLL's SFTConfig: the sft_train worker and the dataset's column names (docs/config.md).
#include <optional>
#include <string>

#include "roll/config/worker_config.h"

namespace roll::config {

struct SFTConfig {
  WorkerConfig sft_train;
  std::optional<std::string> prompt_key;
  std::optional<std::string> query_key;
  std::optional<std::string> response_key;
  std::optional<std::string> system_key;

  template <typename V>
  void visit(V& v) {
    v.nested("sft_train", sft_train);
    v("prompt_key", prompt_key);
    v("query_key", query_key);
    v("response_key", response_key);
    v("system_key", system_key);
  }
};

}  // namespace roll::config
