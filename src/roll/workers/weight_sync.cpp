#include "roll/workers/weight_sync.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <chrono>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"
#include "roll/core/parallel_copy.h"

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

namespace {

// The metadata both sides agree on first: its length, then its JSON bytes, from `root`.
std::vector<TensorMeta> broadcast_meta(comm::ProcessGroup& group, int root, const model::NamedTensors* weights) {
  const bool sending = group.rank() == root;
  std::string text = sending ? meta_to_json(*weights).dump() : std::string();
  at::Tensor len = at::full({1}, static_cast<int64_t>(text.size()), at::kLong);
  group.broadcast(len, root);
  at::Tensor bytes = sending ? bytes_of(text) : at::empty({len.item<int64_t>()}, at::kByte);
  group.broadcast(bytes, root);
  if (!sending) text.assign(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel()));
  return meta_from_json(nlohmann::json::parse(text));
}

// The tensors' bytes, back to back in metadata order, cut into chunks: the unit that goes on the
// wire. A chunk may hold the end of one tensor and the start of the next, so a tensor larger than
// the buffer (a 0.5B model's embedding is 272 MB in bf16) still flows in pieces.
struct Piece {
  size_t tensor;
  int64_t tensor_offset, chunk_offset, bytes;
};
std::vector<std::vector<Piece>> plan_chunks(const std::vector<TensorMeta>& metas, int64_t chunk_bytes) {
  std::vector<std::vector<Piece>> chunks(1);
  int64_t used = 0;
  for (size_t i = 0; i < metas.size(); ++i) {
    for (int64_t off = 0; off < metas[i].nbytes;) {
      if (used == chunk_bytes) {
        chunks.emplace_back();
        used = 0;
      }
      const int64_t n = std::min(metas[i].nbytes - off, chunk_bytes - used);
      chunks.back().push_back({i, off, used, n});
      off += n;
      used += n;
    }
  }
  if (chunks.back().empty()) chunks.pop_back();
  return chunks;
}

int64_t chunk_size(const std::vector<Piece>& chunk) {
  return chunk.empty() ? 0 : chunk.back().chunk_offset + chunk.back().bytes;
}

// One chunk's bytes copied out of (pack) or into (unpack) its tensors, over ATen's threads.
void copy_chunk(uint8_t* base, const std::vector<Piece>& chunk, const std::vector<at::Tensor>& tensors, bool pack) {
  std::vector<core::CopyPiece> copies;
  for (const Piece& p : chunk) {
    uint8_t* in_tensor = static_cast<uint8_t*>(tensors[p.tensor].data_ptr()) + p.tensor_offset;
    uint8_t* in_chunk = base + p.chunk_offset;
    if (pack) core::add_copy(copies, in_chunk, in_tensor, p.bytes);
    else core::add_copy(copies, in_tensor, in_chunk, p.bytes);
  }
  core::copy_in_parallel(copies);
}

// Chunks go on the wire in at most this size whatever model_update_buffer_size_mb allows, so that
// packing, sending and unpacking overlap.
constexpr int64_t kMaxChunk = int64_t{32} << 20;

// The whole transfer for any rank. `tensors`: the sender's (contiguous CPU) tensors, or the
// receiver's destinations, in metadata order. Two staging buffers are used in turn: one is on the
// wire while the other is packed (sender) or unpacked (receiver).
SyncStats pipelined_broadcast(comm::ProcessGroup& group, int root, const std::vector<TensorMeta>& metas,
                              const std::vector<at::Tensor>& tensors, int64_t bucket_bytes) {
  const bool sending = group.rank() == root;
  const auto chunks = plan_chunks(metas, std::min(bucket_bytes, kMaxChunk));
  int64_t largest = 1;
  for (const auto& c : chunks) largest = std::max(largest, chunk_size(c));
  at::Tensor staging[2] = {at::empty({largest}, at::kByte), at::empty({largest}, at::kByte)};
  auto slot = [&](size_t i) { return staging[i % 2].narrow(0, 0, chunk_size(chunks[i])); };
  SyncStats st;
  comm::Work in_flight;
  for (size_t i = 0; i <= chunks.size(); ++i) {
    at::Tensor current;
    if (i < chunks.size()) {
      current = slot(i);
      if (sending) copy_chunk(current.data_ptr<uint8_t>(), chunks[i], tensors, /*pack=*/true);
      st.bytes += current.numel();
      ++st.buckets;
    }
    comm::Work previous = std::move(in_flight);
    in_flight = comm::Work();
    // The sender waits for chunk i-1 before sending chunk i (its buffer is reused for chunk i+1);
    // a receiver posts chunk i first, then unpacks chunk i-1 while chunk i arrives.
    if (sending && previous.valid()) previous.wait();
    if (current.defined()) in_flight = group.broadcast_async(current, root);
    if (!sending) {
      if (previous.valid()) previous.wait();
      if (i > 0) copy_chunk(slot(i - 1).data_ptr<uint8_t>(), chunks[i - 1], tensors, /*pack=*/false);
    }
  }
  st.tensors = static_cast<int64_t>(metas.size());
  return st;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

model::NamedTensors broadcast_weights(comm::ProcessGroup& group, int root, const model::NamedTensors* weights,
                                      int64_t bucket_bytes, SyncStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool sending = group.rank() == root;
  if (sending && !weights) throw Error("model update: the sending rank has no weights");
  if (bucket_bytes < 1) throw Error("model update: model_update_buffer_size_mb must be positive");
  const std::vector<TensorMeta> metas = broadcast_meta(group, root, weights);
  model::NamedTensors out;
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < metas.size(); ++i) {
    if (sending) {
      tensors.push_back((*weights)[i].second.contiguous().cpu());
    } else {
      tensors.push_back(at::empty(metas[i].shape, metas[i].dtype));
      out.emplace_back(metas[i].name, tensors.back());
    }
  }
  SyncStats st = pipelined_broadcast(group, root, metas, tensors, bucket_bytes);
  st.seconds = seconds_since(t0);
  if (stats) *stats = st;
  return out;
}

void receive_weights_into(comm::ProcessGroup& group, int root, const WeightDestination& destination,
                          int64_t bucket_bytes, SyncStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  if (group.rank() == root) throw Error("model update: receive_weights_into called on the sending rank");
  if (bucket_bytes < 1) throw Error("model update: model_update_buffer_size_mb must be positive");
  const std::vector<TensorMeta> metas = broadcast_meta(group, root, nullptr);
  std::vector<at::Tensor> tensors;
  for (const TensorMeta& m : metas) {
    at::Tensor t = destination(m.name, m.dtype, m.shape);
    // Check everything before the first byte arrives: a mismatch found later would leave the
    // sender blocked and the weights half written.
    if (!t.defined() || t.scalar_type() != m.dtype || t.sizes().vec() != m.shape || !t.is_contiguous() ||
        !t.device().is_cpu())
      throw Error(fmt::format("model update: tensor '{}' ({} {}) has no contiguous CPU destination of that dtype and "
                              "shape",
                              m.name, model::safetensors_dtype_name(m.dtype), c10::str(c10::IntArrayRef(m.shape))));
    tensors.push_back(std::move(t));
  }
  SyncStats st = pipelined_broadcast(group, root, metas, tensors, bucket_bytes);
  st.seconds = seconds_since(t0);
  if (stats) *stats = st;
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
