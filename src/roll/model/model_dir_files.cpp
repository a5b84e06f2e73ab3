#include "roll/model/model_dir_files.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace roll::model {

std::vector<std::string> copy_tokenizer_files(const std::string& from, const std::string& to) {
  std::vector<std::string> written;
  if (from.empty() || !fs::is_directory(from)) return written;
  for (const auto& e : fs::directory_iterator(from)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (name == "config.json" || name == "adapter_config.json" || name == "manifest.json" ||
        name.ends_with(".safetensors") || name == "model.safetensors.index.json" || name.ends_with(".bin") ||
        name.ends_with(".pth") || name.ends_with(".pt"))
      continue;
    const fs::path dst = fs::path(to) / name;
    fs::copy_file(e.path(), dst, fs::copy_options::overwrite_existing);
    written.push_back(dst.string());
  }
  return written;
}

}  // namespace roll::model
