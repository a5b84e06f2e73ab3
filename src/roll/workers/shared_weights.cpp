#include "roll/workers/shared_weights.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/core/parallel_copy.h"

namespace roll::workers {
namespace {

constexpr char kMagic[8] = {'R', 'O', 'L', 'L', 'W', 'T', 'S', '1'};
constexpr size_t kFixed = 32;
constexpr int64_t kPage = 4096;
struct Header {
  char magic[8];
  uint64_t table_bytes;
  std::atomic<int64_t> version;
  uint64_t data_offset;
};
static_assert(sizeof(Header) == kFixed);

int64_t align_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(fmt::format("shared weights {}: {}", path, what));
}

[[noreturn]] void fail_errno(const std::string& path, const std::string& what) {
  fail(path, fmt::format("{}: {}", what, std::strerror(errno)));
}

Header& header_of(void* map) { return *static_cast<Header*>(map); }

}  // namespace

void SharedWeights::map(int fd, size_t size, bool writable) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_errno(path_, "fstat failed");
  inode_ = st.st_ino;
  map_size_ = size;
  // Every page populated now, so that no update pays for page faults.
  map_ = mmap(nullptr, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED | MAP_POPULATE, fd, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail_errno(path_, fmt::format("mmap of {} bytes failed", size));
  }
}

std::shared_ptr<SharedWeights> SharedWeights::create(const std::string& path, const model::NamedTensors& layout) {
  std::shared_ptr<SharedWeights> w(new SharedWeights());
  w->path_ = path;
  nlohmann::json table = nlohmann::json::array();
  int64_t offset = 0;
  for (const auto& [name, t] : layout) {
    Entry e{name, t.scalar_type(), t.sizes().vec(), offset, static_cast<int64_t>(t.numel() * t.element_size())};
    table.push_back({{"name", e.name},
                     {"dtype", model::safetensors_dtype_name(e.dtype)},
                     {"shape", e.shape},
                     {"offset", e.offset},
                     {"nbytes", e.nbytes}});
    w->data_bytes_ = e.offset + e.nbytes;
    offset = align_up(offset + e.nbytes, 64);
    w->table_.push_back(std::move(e));
  }
  const std::string text = table.dump();
  const int64_t data_offset = align_up(static_cast<int64_t>(kFixed + text.size()), kPage);
  const size_t size = static_cast<size_t>(data_offset + std::max<int64_t>(offset, 1));

  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail_errno(path, "cannot create");
  w->owner_ = true;
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail_errno(path, fmt::format("cannot size it to {} bytes (is /dev/shm large enough?)", size));
  }
  try {
    w->map(fd, size, /*writable=*/true);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  Header& h = header_of(w->map_);
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.table_bytes = text.size();
  h.version.store(-1, std::memory_order_relaxed);
  h.data_offset = static_cast<uint64_t>(data_offset);
  std::memcpy(static_cast<uint8_t*>(w->map_) + kFixed, text.data(), text.size());
  w->data_ = static_cast<uint8_t*>(w->map_) + data_offset;
  return w;
}

std::shared_ptr<SharedWeights> SharedWeights::open(const std::string& path) {
  std::shared_ptr<SharedWeights> w(new SharedWeights());
  w->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kFixed)) {
    ::close(fd);
    fail(path, "too small to hold a weights table");
  }
  try {
    w->map(fd, static_cast<size_t>(st.st_size), /*writable=*/false);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  const Header& h = header_of(w->map_);
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) fail(path, "not a shared weights file (bad magic)");
  if (kFixed + h.table_bytes > w->map_size_ || h.data_offset > w->map_size_ ||
      h.data_offset < kFixed + h.table_bytes)
    fail(path, "its table runs past the end of the file");
  const auto* text = static_cast<const char*>(w->map_) + kFixed;
  nlohmann::json table;
  try {
    table = nlohmann::json::parse(text, text + h.table_bytes);
  } catch (const std::exception& e) {
    fail(path, fmt::format("bad table: {}", e.what()));
  }
  const int64_t room = static_cast<int64_t>(w->map_size_ - h.data_offset);
  try {
    for (const auto& j : table) {
      Entry e{j.at("name").get<std::string>(),
              model::safetensors_dtype(j.at("dtype").get<std::string>(), path, j.at("name").get<std::string>()),
              j.at("shape").get<std::vector<int64_t>>(), j.at("offset").get<int64_t>(), j.at("nbytes").get<int64_t>()};
      int64_t n = static_cast<int64_t>(c10::elementSize(e.dtype));
      for (int64_t d : e.shape) n *= d;
      if (n != e.nbytes || e.offset < 0 || e.offset + e.nbytes > room)
        fail(path, fmt::format("tensor '{}' does not fit its place in the file", e.name));
      w->data_bytes_ = std::max(w->data_bytes_, e.offset + e.nbytes);
      w->table_.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(path, fmt::format("bad table: {}", e.what()));
  }
  w->data_ = static_cast<uint8_t*>(w->map_) + h.data_offset;
  return w;
}

SharedWeights::~SharedWeights() {
  if (map_) munmap(map_, map_size_);
  if (owner_) ::unlink(path_.c_str());
}

bool SharedWeights::matches(const model::NamedTensors& weights) const {
  if (weights.size() != table_.size()) return false;
  for (size_t i = 0; i < table_.size(); ++i) {
    const auto& [name, t] = weights[i];
    if (name != table_[i].name || t.scalar_type() != table_[i].dtype || t.sizes().vec() != table_[i].shape) return false;
  }
  return true;
}

void SharedWeights::write(const model::NamedTensors& weights, int64_t version) {
  if (!owner_) fail(path_, "only the process that created it writes it");
  if (version < 0) fail(path_, fmt::format("weight version must be >= 0, got {}", version));
  if (!matches(weights)) fail(path_, "the weights' names, dtypes or shapes differ from the file's table");
  Header& h = header_of(map_);
  h.version.store(-1, std::memory_order_release);
  std::vector<at::Tensor> keep;  // contiguous CPU copies of tensors that were neither
  std::vector<core::CopyPiece> pieces;
  for (size_t i = 0; i < table_.size(); ++i) {
    at::Tensor t = weights[i].second;
    if (!t.is_contiguous() || !t.device().is_cpu()) {
      keep.push_back(t.contiguous().cpu());
      t = keep.back();
    }
    core::add_copy(pieces, data_ + table_[i].offset, t.data_ptr(), table_[i].nbytes);
  }
  core::copy_in_parallel(pieces);
  h.version.store(version, std::memory_order_release);
}

bool SharedWeights::is_current() const {
  struct stat st {};
  return ::stat(path_.c_str(), &st) == 0 && st.st_ino == inode_;
}

int64_t SharedWeights::version() const { return header_of(map_).version.load(std::memory_order_acquire); }

model::NamedTensors SharedWeights::views() {
  model::NamedTensors out;
  out.reserve(table_.size());
  auto self = shared_from_this();
  for (const Entry& e : table_)
    out.emplace_back(e.name, at::from_blob(data_ + e.offset, e.shape, [self](void*) {}, at::TensorOptions().dtype(e.dtype)));
  return out;
}

}  // namespace roll::workers
