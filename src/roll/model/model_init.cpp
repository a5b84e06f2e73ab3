#include "roll/model/model_init.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/core/progress.h"
#include "roll/model/tokenizer_trim.h"
#include "roll/model/transformer.h"

namespace fs = std::filesystem;

namespace roll::model {
namespace {

std::optional<int64_t> added_token_id(const nlohmann::json& tokenizer, const std::string& content) {
  if (!tokenizer.contains("added_tokens")) return std::nullopt;
  for (const auto& t : tokenizer["added_tokens"])
    if (t.value("content", "") == content) return t.at("id").get<int64_t>();
  return std::nullopt;
}

std::string token_name(const nlohmann::json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return "";
  if (cfg[key].is_string()) return cfg[key].get<std::string>();
  if (cfg[key].is_object()) return cfg[key].value("content", "");
  return "";
}

}  // namespace

ModelConfig preset_config(const std::string& preset, const std::string& arch) {
  ModelConfig c;
  if (arch == "qwen2") {
    c.arch = Architecture::qwen2;
    c.attention_bias = true;
  } else if (arch == "qwen3") {
    c.arch = Architecture::qwen3;
    c.qk_norm = true;
  } else if (arch == "llama") {
    c.arch = Architecture::llama;
  } else {
    throw Error(fmt::format("--arch '{}': expected qwen2, qwen3 or llama", arch));
  }
  c.model_type = arch;
  c.vocab_size = 151936;
  c.rope_theta = 1000000.0;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 32768;
  c.tie_word_embeddings = true;
  if (preset == "tiny") {
    c.hidden_size = 64, c.num_hidden_layers = 2, c.num_attention_heads = 4, c.num_key_value_heads = 2;
    c.intermediate_size = 256;
  } else if (preset == "small") {
    c.hidden_size = 256, c.num_hidden_layers = 4, c.num_attention_heads = 4, c.num_key_value_heads = 2;
    c.intermediate_size = 1024;
  } else if (preset == "qwen2.5-0.5b-shape") {
    c.hidden_size = 896, c.num_hidden_layers = 24, c.num_attention_heads = 14, c.num_key_value_heads = 2;
    c.intermediate_size = 4864;
  } else {
    throw Error(fmt::format("--preset '{}': expected tiny, small or qwen2.5-0.5b-shape", preset));
  }
  c.head_dim = c.hidden_size / c.num_attention_heads;
  return c;
}

std::string default_tokenizer_dir() {
  if (const char* env = std::getenv("ROLL_ASSETS_DIR"); env && *env) return (fs::path(env) / "qwen3").string();
  return (fs::path(ROLL_SOURCE_DIR) / "third_party" / "assets" / "qwen3").string();
}

int64_t init_model_dir(const ModelInitOptions& o) {
  if (o.out_dir.empty()) throw Error("model init needs an output directory (--out)");
  ModelConfig c = preset_config(o.preset, o.arch);
  if (o.hidden_size > 0) c.hidden_size = o.hidden_size;
  if (o.num_layers > 0) c.num_hidden_layers = o.num_layers;
  if (o.intermediate_size > 0) c.intermediate_size = o.intermediate_size;
  if (o.num_heads > 0) c.num_attention_heads = o.num_heads;
  if (o.num_kv_heads > 0) c.num_key_value_heads = o.num_kv_heads;
  if (o.rope_theta < 0) throw Error(fmt::format("rope theta must be positive, got {}", o.rope_theta));
  if (o.rope_theta > 0) c.rope_theta = o.rope_theta;
  if (c.hidden_size % c.num_attention_heads != 0 || c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(fmt::format("hidden size {} must divide by the {} heads, and the heads by the {} kv heads",
                            c.hidden_size, c.num_attention_heads, c.num_key_value_heads));
  c.head_dim = c.hidden_size / c.num_attention_heads;
  c.tie_word_embeddings = o.tie_word_embeddings;
  const std::string tok_dir = o.tokenizer_dir.empty() ? default_tokenizer_dir() : o.tokenizer_dir;
  const fs::path tok_json = fs::path(tok_dir) / "tokenizer.json";
  const fs::path tok_cfg = fs::path(tok_dir) / "tokenizer_config.json";
  for (const auto& p : {tok_json, tok_cfg})
    if (!fs::exists(p))
      throw Error(fmt::format("tokenizer file {} is missing: run scripts/setup (it installs the Qwen tokenizer into "
                              "third_party/assets) or pass --tokenizer-dir",
                              p.string()));
  nlohmann::json tokenizer = nlohmann::json::parse(std::ifstream(tok_json));
  nlohmann::json tcfg = nlohmann::json::parse(std::ifstream(tok_cfg));
  if (o.vocab > 0) {
    TrimmedTokenizer t = trim_tokenizer(tokenizer, tcfg, o.vocab);
    tokenizer = std::move(t.tokenizer);
    tcfg = std::move(t.tokenizer_config);
    c.vocab_size = t.vocab_size;
  }
  auto eos = added_token_id(tokenizer, token_name(tcfg, "eos_token"));
  auto pad = added_token_id(tokenizer, token_name(tcfg, "pad_token"));
  auto endoftext = added_token_id(tokenizer, "<|endoftext|>");
  c.eos_token_id = eos;
  c.pad_token_id = pad ? pad : endoftext;
  c.bos_token_id = endoftext;

  const at::ScalarType dtype = o.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  if (o.dtype != "bf16" && o.dtype != "fp32") throw Error(fmt::format("--dtype '{}': expected fp32 or bf16", o.dtype));
  if (o.progress) {
    o.progress->start("model init", 2, "phase");
    o.progress->set_postfix("random weights");
  }
  auto model = Transformer::random(c, dtype, o.seed, o.init_std);
  if (o.progress) {
    o.progress->set_postfix(fmt::format("{:.1f}M parameters, writing", model->num_parameters() / 1e6));
    o.progress->advance();
  }
  // Write into a temporary directory and rename, so an interrupted init leaves no half model.
  const fs::path out(o.out_dir);
  const fs::path tmp = out.string() + ".tmp-init";
  fs::remove_all(tmp);
  model->save(tmp.string());
  if (o.vocab > 0) {
    std::ofstream(tmp / "tokenizer.json") << tokenizer.dump();
    std::ofstream(tmp / "tokenizer_config.json") << tcfg.dump(2);
  } else {
    fs::copy_file(tok_json, tmp / "tokenizer.json", fs::copy_options::overwrite_existing);
    fs::copy_file(tok_cfg, tmp / "tokenizer_config.json", fs::copy_options::overwrite_existing);
  }
  GenerationConfig g;
  if (eos) g.eos_token_ids.push_back(*eos);
  if (endoftext && endoftext != eos) g.eos_token_ids.push_back(*endoftext);
  g.pad_token_id = c.pad_token_id;
  g.bos_token_id = c.bos_token_id;
  std::ofstream(tmp / "generation_config.json") << g.to_json();
  if (fs::exists(out)) fs::remove_all(out);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  fs::rename(tmp, out);
  if (o.progress) {
    o.progress->set_postfix(fmt::format("{:.1f}M parameters, written", model->num_parameters() / 1e6));
    o.progress->advance();
    o.progress->finish();
  }
  return model->num_parameters();
}

}  // namespace roll::model
