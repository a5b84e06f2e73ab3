#include "roll/train/checkpoint.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "roll/core/error.h"
#include "roll/core/json_number.h"
#include "roll/model/lora.h"
#include "roll/model/model_dir_files.h"
#include "roll/model/safetensors.h"
#include "roll/train/strategy_impl.h"

namespace fs = std::filesystem;

namespace roll::train {
namespace {

constexpr const char* kFormat = "rollcpp-checkpoint-1";

void fsync_path(const fs::path& p, bool directory = false) {
  int fd = ::open(p.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw Error(fmt::format("checkpoint: cannot open {} to sync it", p.string()));
  ::fsync(fd);
  ::close(fd);
}

void write_text(const fs::path& p, const std::string& text) {
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error(fmt::format("checkpoint: cannot write {}: {}", p.string(), std::strerror(errno)));
  }
  fsync_path(p);
}

std::string state_file(int rank, int world) { return fmt::format("train_state/rank-{:05d}-of-{:05d}.safetensors", rank, world); }

std::optional<int64_t> step_of(const fs::path& dir) {
  static const std::regex re(R"(checkpoint-(\d+))");
  std::smatch m;
  const std::string name = dir.filename().string();
  if (!std::regex_match(name, m, re)) return std::nullopt;
  return std::stoll(m[1].str());
}

void barrier(TrainStrategy::Impl& s) {
  if (s.grads_pg) s.grads_pg->barrier();
}

}  // namespace

std::string save_checkpoint(TrainStrategy& strategy, const std::string& root, int64_t step) {
  TrainStrategy::Impl& s = strategy.internals();
  const fs::path final_dir = fs::path(root) / fmt::format("checkpoint-{}", step);
  const fs::path partial = fs::path(root) / fmt::format(".checkpoint-{}.partial", step);
  model::NamedTensors weights = strategy.full_parameters();  // collective at ZeRO-3
  if (s.rank == 0) {
    fs::create_directories(root);
    fs::remove_all(partial);
    fs::create_directories(partial / "train_state");
  }
  barrier(s);
  if (s.rank == 0) {
    model::ModelConfig c = s.model->config();
    c.torch_dtype = s.dtype == at::kBFloat16 ? "bfloat16" : "float32";
    if (const model::LoraConfig* lora = s.model->lora()) {
      // LoRA: the adapters in PEFT's format over the base model they were trained on; config.json
      // (the base's) lets tools read the architecture without following the base path.
      c.torch_dtype = s.model->dtype() == at::kBFloat16 ? "bfloat16" : "float32";
      write_text(partial / "config.json", c.to_json());
      model::save_peft_adapter(partial.string(), *lora, weights, s.model->base_model_dir());
    } else {
      write_text(partial / "config.json", c.to_json());
      model::write_safetensors_dir(partial.string(), weights, 2ull << 30);
    }
    for (const auto& e : fs::directory_iterator(partial))
      if (e.is_regular_file()) fsync_path(e.path());
    for (const std::string& f : model::copy_tokenizer_files(s.opt.tokenizer_dir, partial.string())) fsync_path(f);
  }
  weights.clear();
  {
    TrainState st = strategy.export_state();
    nlohmann::json meta = {{"format", kFormat},
                           {"global_step", st.global_step},
                           {"optimizer_steps", st.optimizer_steps},
                           {"zero_stage", st.zero_stage},
                           {"world_size", st.world_size},
                           {"rank", st.rank}};
    const fs::path p = partial / state_file(st.rank, st.world_size);
    model::write_safetensors(p.string(), st.tensors,
                             {{"format", "pt"}, {"rollcpp", meta.dump()}, {"layout", st.layout_signature}});
    fsync_path(p);
  }
  barrier(s);
  if (s.rank == 0) {
    nlohmann::json files = nlohmann::json::object();
    for (const auto& e : fs::recursive_directory_iterator(partial))
      if (e.is_regular_file()) files[fs::relative(e.path(), partial).string()] = static_cast<int64_t>(e.file_size());
    nlohmann::json manifest = {
        {"format", kFormat}, {"step", step}, {"world_size", s.world}, {"zero_stage", s.stage}, {"files", files}};
    write_text(partial / "manifest.json", manifest.dump(1));
    fsync_path(partial / "train_state", true);
    fsync_path(partial, true);
    fs::remove_all(final_dir);
    fs::rename(partial, final_dir);
    fsync_path(root, true);
    prune_checkpoints(root, s.opt.max_ckpt_to_keep);
  }
  barrier(s);
  return final_dir.string();
}

std::string checkpoint_problem(const std::string& dir) {
  const fs::path d(dir);
  if (!fs::is_directory(d)) return "not a directory";
  if (!step_of(d)) return "its name is not checkpoint-<step> (an unfinished .partial write?)";
  const fs::path mpath = d / "manifest.json";
  if (!fs::exists(mpath)) return "manifest.json is missing (the write did not finish)";
  nlohmann::json m;
  try {
    std::ifstream in(mpath);
    m = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    return fmt::format("manifest.json is unreadable: {}", e.what());
  }
  if (!m.is_object() || !m.contains("format") || m["format"] != kFormat) return "manifest.json has an unknown format";
  if (!m.contains("files") || !m["files"].is_object()) return "manifest.json lists no files";
  for (const auto& [rel, size] : m["files"].items()) {
    if (!size.is_number_integer()) return fmt::format("manifest.json gives {} the size {}, not a byte count", rel, size.dump());
    const fs::path p = d / rel;
    if (!fs::exists(p)) return fmt::format("{} is missing", rel);
    const auto actual = static_cast<int64_t>(fs::file_size(p));
    if (actual != size.get<int64_t>()) return fmt::format("{} has {} bytes, the manifest says {}", rel, actual, size.get<int64_t>());
  }
  return "";
}

void load_checkpoint(TrainStrategy& strategy, const std::string& dir) {
  TrainStrategy::Impl& s = strategy.internals();
  if (std::string why = checkpoint_problem(dir); !why.empty())
    throw Error(fmt::format("checkpoint {} cannot be loaded: {}", dir, why));
  const fs::path state_path = fs::path(dir) / state_file(s.rank, s.world);
  if (!fs::exists(state_path)) {
    nlohmann::json m = nlohmann::json::parse(std::ifstream(fs::path(dir) / "manifest.json"));
    throw Error(fmt::format("checkpoint {} was written by {} rank(s); this run has {} (resharding is not supported)",
                            dir, m.value("world_size", 0), s.world));
  }
  model::NamedTensors weights;
  if (s.model->lora()) {
    if (!model::is_peft_adapter_dir(dir))
      throw Error(fmt::format("checkpoint {} holds a full model, and this run trains LoRA adapters", dir));
    weights = model::load_peft_adapter(dir).adapters;
  } else {
    if (model::is_peft_adapter_dir(dir))
      throw Error(fmt::format("checkpoint {} holds LoRA adapters, and this run trains the full model (set "
                              "model_args.lora_target as the run that wrote it did)", dir));
    auto files = model::SafetensorsDir::open(dir);
    for (const auto& [name, t] : s.model->named_parameters()) {
      if (!files.has(name)) throw Error(fmt::format("checkpoint {}: weight '{}' is missing", dir, name));
      weights.emplace_back(name, files.get(name).to(s.dtype));
    }
  }
  strategy.load_full_parameters(weights);
  weights.clear();
  auto file = model::SafetensorsFile::open(state_path.string());
  TrainState st;
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(file->metadata().at("rollcpp"));
    st.layout_signature = file->metadata().at("layout");
  } catch (const std::exception& e) {
    throw Error(fmt::format("checkpoint {}: {} has no rollcpp metadata", dir, state_path.string()));
  }
  st.global_step = json_integer<int64_t>(meta.at("global_step"), "global_step");
  st.optimizer_steps = json_integer<int64_t>(meta.at("optimizer_steps"), "optimizer_steps");
  st.zero_stage = json_integer<int>(meta.at("zero_stage"), "zero_stage");
  st.world_size = json_integer<int>(meta.at("world_size"), "world_size");
  st.rank = json_integer<int>(meta.at("rank"), "rank");
  for (const auto& e : file->entries()) st.tensors.emplace_back(e.name, file->get(e.name).clone());
  strategy.import_state(st);
}

std::optional<std::string> latest_checkpoint(const std::string& root) {
  if (!fs::is_directory(root)) return std::nullopt;
  std::optional<std::pair<int64_t, std::string>> best;
  for (const auto& e : fs::directory_iterator(root)) {
    auto step = step_of(e.path());
    if (!step || !checkpoint_problem(e.path().string()).empty()) continue;
    if (!best || *step > best->first) best = {{*step, e.path().string()}};
  }
  if (!best) return std::nullopt;
  return best->second;
}

void prune_checkpoints(const std::string& root, int64_t keep) {
  if (keep <= 0 || !fs::is_directory(root)) return;
  std::vector<std::pair<int64_t, fs::path>> found;
  for (const auto& e : fs::directory_iterator(root))
    if (auto step = step_of(e.path()); step && e.is_directory()) found.emplace_back(*step, e.path());
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
    // Renamed before it is removed: a half-removed directory never carries a checkpoint's name.
    const fs::path doomed = found[i].second.string() + ".removing";
    fs::remove_all(doomed);
    fs::rename(found[i].second, doomed);
    fs::remove_all(doomed);
  }
}

}  // namespace roll::train
