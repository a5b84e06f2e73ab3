#pragma once
// `llm_proxy` of an env manager or a reward worker: who answers the env's prompts (docs/config.md).
#include <string>

#include "roll/config/node.h"

namespace roll::config {

struct LlmProxyConfig {
  std::string proxy_type = "policy";  // policy | openai | random
  NodePtr proxy_config;

  template <typename V>
  void visit(V& v) {
    v("proxy_type", proxy_type);
    v("proxy_config", proxy_config);
  }
};

}  // namespace roll::config
