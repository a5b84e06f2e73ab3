#include "roll/workers/weight_sync.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"

namespace roll::workers {
namespace {

struct TensorMeta {
  std::string name;
  at::ScalarType dtype;
  std::vector<int64_t> shape;
  int64_t nbytes = 0;
};

nlohmann::json meta_to_json(const model::NamedTensors& w) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [name, t] : w)
    j.push_back({{"name", name}, {"dtype", model::safetensors_dtype_name(t.scalar_type())}, {"shape", t.sizes().vec()}});
  return j;
}

std::vector<TensorMeta> meta_from_json(const nlohmann::json& j) {
  std::vector<TensorMeta> out;
  for (const auto& e : j) {
    TensorMeta m;
    m.name = e.at("name").get<std::string>();
    m.dtype = model::safetensors_dtype(e.at("dtype").get<std::string>(), "model update", m.name);
    m.shape = e.at("shape").get<std::vector<int64_t>>();
    int64_t n = 1;
    for (int64_t d : m.shape) n *= d;
    m.nbytes = n * static_cast<int64_t>(c10::elementSize(m.dtype));
    out.push_back(std::move(m));
  }
  return out;
}

// Buckets as [first, last) tensor index ranges of at most `limit` bytes (a larger tensor alone).
std::vector<std::pair<size_t, size_t>> plan_buckets(const std::vector<TensorMeta>& metas, int64_t limit) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t first = 0;
  int64_t bytes = 0;
  for (size_t i = 0; i < metas.size(); ++i) {
    if (i > first && bytes + metas[i].nbytes > limit) {
      out.emplace_back(first, i);
      first = i;
      bytes = 0;
    }
    bytes += metas[i].nbytes;
  }
  if (first < metas.size()) out.emplace_back(first, metas.size());
  return out;
}

at::Tensor bytes_of(const std::string& s) {
  auto t = at::empty({static_cast<int64_t>(s.size())}, at::kByte);
  std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

}  // namespace

std::shared_ptr<comm::ProcessGroup> join_model_update_group(const std::shared_ptr<comm::Store>& store,
                                                            const nlohmann::json& args, int rank) {
  comm::GroupOptions go;
  go.name = args.at("group").get<std::string>();
  go.timeout = std::chrono::seconds(args.value("timeout_s", 600));
  return comm::ProcessGroup::create(store, rank, args.at("world_size").get<int>(), go);
}

model::NamedTensors broadcast_weights(comm::ProcessGroup& group, int root, const model::NamedTensors* weights,
                                      int64_t bucket_bytes, SyncStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool sending = group.rank() == root;
  if (sending && !weights) throw Error("model update: the sending rank has no weights");
  if (bucket_bytes < 1) throw Error("model update: model_update_buffer_size_mb must be positive");

  // Metadata: its length, then its JSON bytes.
  std::string meta_text = sending ? meta_to_json(*weights).dump() : std::string();
  at::Tensor len = at::full({1}, static_cast<int64_t>(meta_text.size()), at::kLong);
  group.broadcast(len, root);
  at::Tensor meta_bytes = sending ? bytes_of(meta_text) : at::empty({len.item<int64_t>()}, at::kByte);
  group.broadcast(meta_bytes, root);
  if (!sending) meta_text.assign(static_cast<const char*>(meta_bytes.data_ptr()), static_cast<size_t>(meta_bytes.numel()));
  const std::vector<TensorMeta> metas = meta_from_json(nlohmann::json::parse(meta_text));

  model::NamedTensors out;
  SyncStats st;
  for (const auto& [first, last] : plan_buckets(metas, bucket_bytes)) {
    int64_t total = 0;
    for (size_t i = first; i < last; ++i) total += metas[i].nbytes;
    at::Tensor bucket = at::empty({total}, at::kByte);
    auto* base = static_cast<uint8_t*>(bucket.data_ptr());
    if (sending) {
      int64_t off = 0;
      for (size_t i = first; i < last; ++i) {
        at::Tensor src = (*weights)[i].second.contiguous().cpu();
        std::memcpy(base + off, src.data_ptr(), static_cast<size_t>(metas[i].nbytes));
        off += metas[i].nbytes;
      }
    }
    group.broadcast(bucket, root);
    if (!sending) {
      int64_t off = 0;
      for (size_t i = first; i < last; ++i) {
        at::Tensor t = at::empty(metas[i].shape, metas[i].dtype);
        std::memcpy(t.data_ptr(), base + off, static_cast<size_t>(metas[i].nbytes));
        off += metas[i].nbytes;
        out.emplace_back(metas[i].name, std::move(t));
      }
    }
    st.bytes += total;
    ++st.buckets;
  }
  st.tensors = static_cast<int64_t>(metas.size());
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats) *stats = st;
  return out;
}

std::string write_weights_file(const std::string& dir, const model::NamedTensors& weights) {
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/model.safetensors";
  const std::string tmp = fmt::format("{}/.model.safetensors.{}.tmp", dir, getpid());
  model::write_safetensors(tmp, weights);
  std::filesystem::rename(tmp, file);
  return file;
}

model::NamedTensors read_weights_file(const std::string& file) {
  auto f = model::SafetensorsFile::open(file);
  model::NamedTensors out;
  for (const auto& e : f->entries()) out.emplace_back(e.name, f->get(e.name).clone());
  return out;
}

nlohmann::json weights_digest(const model::NamedTensors& weights) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, t] : weights) {
    at::Tensor c = t.contiguous().cpu();
    const auto* p = static_cast<const uint8_t*>(c.data_ptr());
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0, n = c.numel() * c.element_size(); i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    j[name] = fmt::format("{:016x}", h);
  }
  return j;
}

}  // namespace roll::workers
