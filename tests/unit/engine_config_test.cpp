// ROLL's vllm/sglang strategy_config keys and generating_args onto the engine's settings.
#include <gtest/gtest.h>

#include "roll/config/node.h"
#include "roll/config/sampling_params.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/core/generation.h"
#include "roll/engine/engine_config.h"

using namespace roll;
using namespace roll::engine;

TEST(EngineConfig, VllmStrategyConfigKeys) {
  auto node = config::parse_yaml_text(
      "gpu_memory_utilization: 0.6\nblock_size: 32\nmax_model_len: 4096\nenable_prefix_caching: false\n"
      "max_num_batched_tokens: 2048\nmax_num_seqs: 64\nload_format: dummy\nenforce_eager: true\n"
      "tensor_parallel_size: 1\nsleep_level: 1\n",
      {});
  EngineConfig c;
  std::vector<std::string> ignored;
  apply_strategy_config(node, "actor_infer.strategy_args.strategy_config", c, &ignored);
  EXPECT_DOUBLE_EQ(c.gpu_memory_utilization, 0.6);
  EXPECT_EQ(c.block_size, 32);
  EXPECT_EQ(c.max_model_len, 4096);
  EXPECT_FALSE(c.enable_prefix_caching);
  EXPECT_EQ(c.max_num_batched_tokens, 2048);
  EXPECT_EQ(c.max_num_seqs, 64);
  EXPECT_EQ(ignored.size(), 3u);  // load_format, enforce_eager, sleep_level
  EngineConfig s;
  apply_strategy_config(config::parse_yaml_text("mem_fraction_static: 0.7\n", {}), "x", s);
  EXPECT_DOUBLE_EQ(s.gpu_memory_utilization, 0.7);
}

TEST(EngineConfig, BadStrategyValuesNameTheKey) {
  EngineConfig c;
  auto expect_error = [&](const std::string& yaml, const std::string& key) {
    try {
      apply_strategy_config(config::parse_yaml_text(yaml, {}), "actor_infer.strategy_args.strategy_config", c);
      ADD_FAILURE() << yaml << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect_error("gpu_memory_utilization: 1.5\n", "strategy_config.gpu_memory_utilization");
  expect_error("block_size: 0\n", "strategy_config.block_size");
  expect_error("max_num_seqs: many\n", "strategy_config.max_num_seqs");
  expect_error("tensor_parallel_size: two\n", "strategy_config.tensor_parallel_size");
}

TEST(EngineConfig, GeneratingArgumentsToSamplingParams) {
  config::GeneratingArguments g;  // ROLL's defaults
  auto p = config::sampling_params_from(g, {151645, 151643});
  EXPECT_DOUBLE_EQ(p.temperature, 0.95);
  EXPECT_DOUBLE_EQ(p.top_p, 0.7);
  EXPECT_EQ(p.top_k, 50);
  EXPECT_EQ(p.max_new_tokens, 8192);
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{151645, 151643}));
  g.do_sample = false;
  g.num_return_sequences = 4;
  p = config::sampling_params_from(g, {});
  EXPECT_EQ(p.temperature, 0.0);
  EXPECT_EQ(p.n, 4);
  g.num_beams = 2;
  EXPECT_THROW(config::sampling_params_from(g, {}), NotSupportedError);
  g.num_beams = 1;
  g.top_p = 0;
  EXPECT_THROW(config::sampling_params_from(g, {}), Error);
}
