#include "roll/core/batch_io.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "roll/core/error.h"

namespace roll {
namespace {

// The wire is little-endian; every machine we target (x86-64, aarch64) is too, so bytes go out as they lie.
static_assert(std::endian::native == std::endian::little, "batch_io assumes a little-endian host");

constexpr char kMagic[8] = {'R', 'L', 'B', 'A', 'T', 'C', 'H', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint8_t kMaxDims = 32;

// Our own dtype codes, stable across libtorch versions (ScalarType numbering is not a wire format).
struct DtypeCode {
  uint8_t code;
  at::ScalarType type;
};
constexpr DtypeCode kDtypes[] = {
    {0, at::kBool},  {1, at::kByte},  {2, at::kChar},     {3, at::kShort},  {4, at::kInt},
    {5, at::kLong},  {6, at::kHalf},  {7, at::kBFloat16}, {8, at::kFloat},  {9, at::kDouble},
};

uint8_t dtype_code(at::ScalarType type, const std::string& name) {
  for (const auto& d : kDtypes)
    if (d.type == type) return d.code;
  throw Error(fmt::format("serialize: tensor '{}' has dtype {}, which the batch format does not carry", name, c10::toString(type)));
}

at::ScalarType dtype_from_code(uint8_t code, const std::string& name) {
  for (const auto& d : kDtypes)
    if (d.code == code) return d.type;
  throw Error(fmt::format("corrupt batch header: tensor '{}' has unknown dtype code {}", name, code));
}

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void bytes(std::string_view s) { out_.append(s); }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view bytes(uint64_t n, const char* what) {
    need(n, what);
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return in_.size() - pos_; }

 private:
  void need(uint64_t n, const char* what) const {
    if (n > left())
      throw Error(fmt::format("truncated batch header: {} at byte {} needs {} bytes, only {} left", what, pos_, n,
                              left()));
  }
  std::string_view in_;
  size_t pos_ = 0;
};

struct TensorDesc {
  std::string name;
  at::ScalarType dtype;
  std::vector<int64_t> dims;
  uint64_t nbytes;
};

struct Header {
  int64_t batch_size = 0;
  std::vector<TensorDesc> tensors;
  nlohmann::json rest;  // {"columns": [[name, cells], ...], "meta": {...}}
  size_t length = 0;    // bytes the header occupies
};

Header parse_header(std::string_view in) {
  Reader r(in);
  std::string_view magic = r.bytes(sizeof(kMagic), "magic");
  if (std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0)
    throw Error("not a serialized batch: bad magic (expected \"RLBATCH\")");
  const auto version = r.get<uint32_t>("version");
  if (version != kVersion)
    throw Error(fmt::format("unsupported batch format version {} (this build reads version {})", version, kVersion));
  Header h;
  h.batch_size = r.get<int64_t>("batch size");
  if (h.batch_size < 0) throw Error(fmt::format("corrupt batch header: negative batch size {}", h.batch_size));
  const auto n_tensors = r.get<uint32_t>("tensor count");
  // Smallest tensor record: name length, dtype, ndim, one dim, byte count.
  constexpr size_t kMinRecord = 4 + 1 + 1 + 8 + 8;
  if (n_tensors > r.left() / kMinRecord)
    throw Error(fmt::format("corrupt batch header: claims {} tensors but only {} header bytes remain", n_tensors,
                            r.left()));
  std::unordered_set<std::string> names;
  h.tensors.reserve(n_tensors);
  for (uint32_t i = 0; i < n_tensors; ++i) {
    TensorDesc d;
    const auto name_len = r.get<uint32_t>("tensor name length");
    d.name = std::string(r.bytes(name_len, "tensor name"));
    if (!names.insert(d.name).second)
      throw Error(fmt::format("corrupt batch header: tensor '{}' appears twice", d.name));
    d.dtype = dtype_from_code(r.get<uint8_t>("tensor dtype"), d.name);
    const auto ndim = r.get<uint8_t>("tensor rank");
    if (ndim == 0 || ndim > kMaxDims)
      throw Error(fmt::format("corrupt batch header: tensor '{}' has rank {} (expected 1..{})", d.name, ndim, kMaxDims));
    uint64_t numel = 1;
    bool overflow = false;
    for (uint8_t k = 0; k < ndim; ++k) {
      const auto dim = r.get<int64_t>("tensor shape");
      if (dim < 0) throw Error(fmt::format("corrupt batch header: tensor '{}' has negative dim {}", d.name, dim));
      if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(dim)) overflow = true;
      numel *= static_cast<uint64_t>(dim);
      d.dims.push_back(dim);
    }
    if (d.dims[0] != h.batch_size)
      throw Error(fmt::format("corrupt batch header: tensor '{}' has {} rows but the batch has {}", d.name, d.dims[0],
                              h.batch_size));
    d.nbytes = r.get<uint64_t>("tensor byte count");
    const uint64_t elem = at::elementSize(d.dtype);
    if (overflow || (numel != 0 && numel > std::numeric_limits<uint64_t>::max() / elem) || numel * elem != d.nbytes)
      throw Error(fmt::format("corrupt batch header: tensor '{}' declares {} bytes, which does not match its shape",
                              d.name, d.nbytes));
    h.tensors.push_back(std::move(d));
  }
  const auto rest_len = r.get<uint64_t>("columns/meta length");
  std::string_view rest = r.bytes(rest_len, "columns/meta blob");
  try {
    h.rest = nlohmann::json::from_msgpack(rest.begin(), rest.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("corrupt batch header: the columns/meta blob is not valid msgpack ({})", e.what()));
  }
  if (!h.rest.is_object() || !h.rest.contains("columns") || !h.rest["columns"].is_array() || !h.rest.contains("meta"))
    throw Error("corrupt batch header: the columns/meta blob lacks \"columns\" or \"meta\"");
  h.length = r.pos();
  return h;
}

at::Tensor make_tensor(const TensorDesc& d, std::string_view buf, const std::shared_ptr<const void>& owner) {
  const auto options = at::TensorOptions().dtype(d.dtype);
  const auto elem = static_cast<uintptr_t>(at::elementSize(d.dtype));
  if (owner && d.nbytes > 0 && reinterpret_cast<uintptr_t>(buf.data()) % elem == 0) {
    // Zero-copy: the tensor keeps the received buffer alive through `owner`.
    return at::from_blob(const_cast<char*>(buf.data()), d.dims, [owner](void*) {}, options);
  }
  at::Tensor t = at::empty(d.dims, options);
  if (d.nbytes > 0) std::memcpy(t.data_ptr(), buf.data(), d.nbytes);
  return t;
}

Batch build(const Header& h, std::span<const std::string_view> buffers, const std::shared_ptr<const void>& owner) {
  if (buffers.size() != h.tensors.size())
    throw Error(fmt::format("batch frames: header describes {} tensors but {} buffers came", h.tensors.size(),
                            buffers.size()));
  Batch batch(h.batch_size);
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    const TensorDesc& d = h.tensors[i];
    if (buffers[i].size() != d.nbytes)
      throw Error(fmt::format("batch frames: tensor '{}' needs {} bytes but its buffer has {}", d.name, d.nbytes,
                              buffers[i].size()));
    batch.set_tensor(d.name, make_tensor(d, buffers[i], owner));
  }
  for (const auto& entry : h.rest["columns"]) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_array())
      throw Error("corrupt batch header: a non-tensor column entry is not [name, cells]");
    const auto& name = entry[0].get_ref<const std::string&>();
    if (batch.has(name)) throw Error(fmt::format("corrupt batch header: column '{}' appears twice", name));
    if (static_cast<int64_t>(entry[1].size()) != h.batch_size)
      throw Error(fmt::format("corrupt batch header: non-tensor column '{}' has {} cells but the batch has {}", name,
                              entry[1].size(), h.batch_size));
    batch.set_column(name, entry[1].get<NonTensorColumn>());
  }
  batch.meta = h.rest["meta"];
  if (h.tensors.empty() && h.rest["columns"].empty() && h.batch_size == 0) {
    // A batch that never got a size reads back the same way (its first column sets the size).
    nlohmann::json meta = std::move(batch.meta);
    batch = Batch();
    batch.meta = std::move(meta);
  }
  return batch;
}

}  // namespace

std::string_view BatchFrames::tensor_bytes(size_t i) const {
  const at::Tensor& t = tensors.at(i);
  return {static_cast<const char*>(t.data_ptr()), t.nbytes()};
}

BatchFrames to_frames(const Batch& batch) {
  BatchFrames frames;
  std::string& out = frames.header;
  Writer w(out);
  w.bytes(std::string_view(kMagic, sizeof(kMagic)));
  w.put<uint32_t>(kVersion);
  w.put<int64_t>(batch.size());
  const auto keys = batch.tensor_keys();
  w.put<uint32_t>(static_cast<uint32_t>(keys.size()));
  for (const auto& key : keys) {
    at::Tensor t = batch.tensor(key);
    const uint8_t code = dtype_code(t.scalar_type(), key);
    if (t.dim() > kMaxDims) throw Error(fmt::format("serialize: tensor '{}' has rank {} (> {})", key, t.dim(), kMaxDims));
    if (!t.device().is_cpu()) t = t.to(at::kCPU);
    t = t.contiguous();
    w.put<uint32_t>(static_cast<uint32_t>(key.size()));
    w.bytes(key);
    w.put<uint8_t>(code);
    w.put<uint8_t>(static_cast<uint8_t>(t.dim()));
    for (int64_t d : t.sizes()) w.put<int64_t>(d);
    w.put<uint64_t>(t.nbytes());
    frames.tensors.push_back(std::move(t));
  }
  nlohmann::json columns = nlohmann::json::array();
  for (const auto& key : batch.column_keys()) columns.push_back(nlohmann::json::array({key, batch.column(key)}));
  nlohmann::json rest = {{"columns", std::move(columns)}, {"meta", batch.meta}};
  std::vector<uint8_t> packed = nlohmann::json::to_msgpack(rest);
  w.put<uint64_t>(packed.size());
  out.append(reinterpret_cast<const char*>(packed.data()), packed.size());
  return frames;
}

Batch from_frames(std::string_view header, std::span<const std::string_view> buffers,
                  std::shared_ptr<const void> owner) {
  Header h = parse_header(header);
  if (h.length != header.size())
    throw Error(fmt::format("corrupt batch header: {} trailing bytes after the header", header.size() - h.length));
  return build(h, buffers, owner);
}

std::string serialize(const Batch& batch) {
  BatchFrames frames = to_frames(batch);
  size_t total = frames.header.size();
  for (const auto& t : frames.tensors) total += t.nbytes();
  std::string out;
  out.reserve(total);
  out += frames.header;
  for (size_t i = 0; i < frames.tensors.size(); ++i) out += frames.tensor_bytes(i);
  return out;
}

Batch deserialize(std::string_view bytes) {
  Header h = parse_header(bytes);
  std::vector<std::string_view> buffers;
  buffers.reserve(h.tensors.size());
  size_t pos = h.length;
  for (const auto& d : h.tensors) {
    const size_t left = bytes.size() - pos;
    if (d.nbytes > left)
      throw Error(fmt::format("truncated batch: tensor '{}' needs {} bytes, only {} left", d.name, d.nbytes, left));
    buffers.push_back(bytes.substr(pos, d.nbytes));
    pos += d.nbytes;
  }
  if (pos != bytes.size())
    throw Error(fmt::format("corrupt batch: {} trailing bytes after the last tensor", bytes.size() - pos));
  return build(h, buffers, nullptr);
}

}  // namespace roll
