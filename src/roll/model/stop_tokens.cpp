#include "roll/model/stop_tokens.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "roll/model/hf_config.h"
#include "roll/model/tokenizer.h"

namespace roll::model {

std::vector<int32_t> stop_token_ids(const std::string& model_dir, const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  auto add = [&](std::optional<int64_t> id) {
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(static_cast<int32_t>(*id));
  };
  const auto gen_file = std::filesystem::path(model_dir) / "generation_config.json";
  if (std::filesystem::exists(gen_file))
    for (int64_t id : GenerationConfig::load(gen_file.string()).eos_token_ids) add(id);
  add(tokenizer.eos_id());
  add(tokenizer.pad_id());
  return ids;
}

}  // namespace roll::model
