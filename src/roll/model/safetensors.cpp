#include "roll/model/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "roll/core/error.h"

namespace fs = std::filesystem;

namespace roll::model {
namespace {

size_t itemsize(at::ScalarType t) { return c10::elementSize(t); }

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw Error(fmt::format("safetensors file {}: {}", file, what));
}

}  // namespace

at::ScalarType safetensors_dtype(const std::string& n, const std::string& file, const std::string& tensor) {
  if (n == "F32") return at::kFloat;
  if (n == "BF16") return at::kBFloat16;
  if (n == "F16") return at::kHalf;
  if (n == "F64") return at::kDouble;
  if (n == "I64") return at::kLong;
  if (n == "I32") return at::kInt;
  if (n == "I16") return at::kShort;
  if (n == "I8") return at::kChar;
  if (n == "U8") return at::kByte;
  if (n == "BOOL") return at::kBool;
  fail(file, fmt::format("tensor '{}' has unsupported dtype '{}' (supported: F32, BF16, F16, F64, I64, I32, I16, I8, "
                         "U8, BOOL)",
                         tensor, n));
}

std::string safetensors_dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "F32";
    case at::kBFloat16: return "BF16";
    case at::kHalf: return "F16";
    case at::kDouble: return "F64";
    case at::kLong: return "I64";
    case at::kInt: return "I32";
    case at::kShort: return "I16";
    case at::kChar: return "I8";
    case at::kByte: return "U8";
    case at::kBool: return "BOOL";
    default: throw Error(fmt::format("cannot write tensors of dtype {} to safetensors", c10::toString(t)));
  }
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->self_ = f;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, "cannot stat");
  }
  f->map_size_ = static_cast<size_t>(st.st_size);
  if (f->map_size_ < 8) {
    ::close(fd);
    fail(path, fmt::format("truncated: {} bytes, a safetensors file starts with an 8-byte header size", f->map_size_));
  }
  f->map_ = mmap(nullptr, f->map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (f->map_ == MAP_FAILED) {
    f->map_ = nullptr;
    fail(path, "mmap failed");
  }
  SafetensorsHeader header = parse_safetensors_header(static_cast<const uint8_t*>(f->map_), f->map_size_, path);
  f->data_ = static_cast<const uint8_t*>(f->map_) + header.data_offset;
  f->metadata_ = std::move(header.metadata);
  f->entries_ = std::move(header.entries);
  for (size_t i = 0; i < f->entries_.size(); ++i) f->index_[f->entries_[i].name] = i;
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(map_, map_size_);
}

bool SafetensorsFile::has(const std::string& name) const { return index_.count(name) > 0; }

at::Tensor SafetensorsFile::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail(path_, fmt::format("has no tensor '{}'", name));
  const auto& e = entries_[it->second];
  const at::ScalarType t = safetensors_dtype(e.dtype, path_, e.name);
  const uint8_t* p = data_ + e.begin;
  auto opts = at::TensorOptions().dtype(t);
  if (reinterpret_cast<uintptr_t>(p) % itemsize(t) != 0) {
    // Misaligned data (a writer that did not pad its header): copy instead of viewing.
    at::Tensor out = at::empty(e.shape, opts);
    std::memcpy(out.data_ptr(), p, e.end - e.begin);
    return out;
  }
  auto keep = self_.lock();  // the tensor keeps the mapping alive
  return at::from_blob(const_cast<uint8_t*>(p), e.shape, [keep](void*) {}, opts);
}

SafetensorsDir SafetensorsDir::open(const std::string& dir) {
  SafetensorsDir d;
  d.dir_ = dir;
  if (!fs::is_directory(dir)) throw Error(fmt::format("model directory {} does not exist", dir));
  std::vector<std::string> files;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::ifstream in(index, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::map<std::string, size_t> file_ids;
    for (const auto& [tensor, shard] : parse_safetensors_index(text, index.string())) {
      if (!file_ids.count(shard)) {
        const fs::path p = fs::path(dir) / shard;
        if (!fs::is_regular_file(p))
          throw Error(fmt::format("{}: shard {} (holding '{}') does not exist", index.string(), p.string(), tensor));
        file_ids[shard] = d.files_.size();
        d.files_.push_back(SafetensorsFile::open(p.string()));
      }
      const auto& f = d.files_[file_ids[shard]];
      if (!f->has(tensor))
        throw Error(fmt::format("{}: tensor '{}' is listed in shard {} but missing from it", index.string(), tensor,
                                shard));
      d.where_[tensor] = file_ids[shard];
    }
    return d;
  }
  if (fs::exists(fs::path(dir) / "model.safetensors")) {
    files.push_back((fs::path(dir) / "model.safetensors").string());
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) throw Error(fmt::format("model directory {} has no *.safetensors file", dir));
  for (const auto& p : files) {
    d.files_.push_back(SafetensorsFile::open(p));
    for (const auto& e : d.files_.back()->entries()) d.where_[e.name] = d.files_.size() - 1;
  }
  return d;
}

std::vector<std::string> SafetensorsDir::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : where_) out.push_back(k);
  return out;
}

at::Tensor SafetensorsDir::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw Error(fmt::format("model directory {}: tensor '{}' is missing", dir_, name));
  return files_[it->second]->get(name);
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<at::Tensor> contiguous;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    const uint64_t n = c.numel() * c.element_size();
    header[name] = {{"dtype", safetensors_dtype_name(c.scalar_type())},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
    contiguous.push_back(c);
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // keep tensor data 8-byte aligned
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
    uint64_t len = h.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const auto& c : contiguous)
      out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * c.element_size()));
    out.flush();  // the last buffer's error shows here, not in the destructor
    if (!out) throw Error(fmt::format("write to {} failed: {}", tmp, std::strerror(errno)));
  }
  fs::rename(tmp, path);  // a reader never sees a half-written file under the final name
}

void write_safetensors_dir(const std::string& dir, const NamedTensors& tensors, uint64_t max_shard_bytes) {
  fs::create_directories(dir);
  std::vector<NamedTensors> shards(1);
  uint64_t cur = 0, total = 0;
  for (const auto& nt : tensors) {
    const uint64_t n = nt.second.numel() * nt.second.element_size();
    if (cur > 0 && cur + n > max_shard_bytes) {
      shards.emplace_back();
      cur = 0;
    }
    shards.back().push_back(nt);
    cur += n;
    total += n;
  }
  if (shards.size() == 1) {
    write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors);
    return;
  }
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  nlohmann::ordered_json weight_map;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    write_safetensors((fs::path(dir) / name).string(), shards[i]);
    for (const auto& [tn, t] : shards[i]) weight_map[tn] = name;
  }
  index["weight_map"] = weight_map;
  std::ofstream(fs::path(dir) / "model.safetensors.index.json") << index.dump(2) << "\n";
}

}  // namespace roll::model
