#include "roll/core/cpu_block_cache.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "roll/core/error.h"
#include "roll/core/process_memory.h"

namespace roll::core {
namespace {

// Eight size classes per power of two: a block serves any request it exceeds by at most 12.5%,
// so sizes that differ slightly between micro-batches (the last chunk of a sequence) still meet.
size_t size_class(size_t n) {
  size_t top = size_t{1} << (63 - __builtin_clzll(n));
  const size_t step = std::max<size_t>(top / 8, 4096);
  return (n + step - 1) / step * step;
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    if (static_cast<int64_t>(n) < kMinCachedBytes) return fallback_->allocate(n);
    // c10's interface is const; the cache is this allocator's state.
    void* p = const_cast<CachingCpuAllocator*>(this)->take(size_class(n));
    return {p, p, &release_block, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release_block; }

  void set_limit(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = bytes;
    evict_over(limit_);
  }
  void release_all() {
    std::lock_guard<std::mutex> lock(mu_);
    evict_over(0);
  }
  CpuBlockCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {hits_, misses_, live_bytes_, cached_bytes_, limit_};
  }

  static CachingCpuAllocator& instance() {
    static CachingCpuAllocator* a = new CachingCpuAllocator();  // outlives every tensor
    return *a;
  }

 private:
  struct Cached {
    uint64_t freed_at;  // order of the frees: the oldest block is unmapped first
    void* ptr;
  };

  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The smallest cached block that fits, if it is at most a quarter larger: a bigger one is
      // left for the request it was made for.
      auto it = free_.lower_bound(bytes);
      if (it != free_.end() && it->first <= bytes + bytes / 4) {
        const size_t have = it->first;
        void* p = it->second.ptr;
        free_.erase(it);
        cached_bytes_ -= static_cast<int64_t>(have);
        live_.emplace(p, have);
        live_bytes_ += static_cast<int64_t>(have);
        ++hits_;
        return p;
      }
    }
    void* p = map_fresh(bytes);
    if (!p) {  // give the cached blocks back to the system and try once more
      release_all();
      p = map_fresh(bytes);
    }
    TORCH_CHECK(p, "the CPU block cache could not map ", bytes, " bytes (out of memory)");
    std::lock_guard<std::mutex> lock(mu_);
    live_.emplace(p, bytes);
    live_bytes_ += static_cast<int64_t>(bytes);
    ++misses_;
    return p;
  }

  static void* map_fresh(size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    // Transparent huge pages where the kernel allows them on request: a fresh block then faults
    // in 2 MiB at a time instead of 4 KiB.
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
  }

  static void release_block(void* p) { instance().give(p); }

  void give(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return;  // not ours: cannot happen, every block we hand out is recorded
    const size_t bytes = it->second;
    live_.erase(it);
    live_bytes_ -= static_cast<int64_t>(bytes);
    free_.emplace(bytes, Cached{++frees_, p});
    cached_bytes_ += static_cast<int64_t>(bytes);
    evict_over(limit_);
  }

  // Unmaps the oldest cached blocks until at most `limit` bytes stay cached (mu_ held).
  void evict_over(int64_t limit) {
    while (cached_bytes_ > limit && !free_.empty()) {
      auto oldest = free_.begin();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->second.freed_at < oldest->second.freed_at) oldest = it;
      munmap(oldest->second.ptr, oldest->first);
      cached_bytes_ -= static_cast<int64_t>(oldest->first);
      free_.erase(oldest);
    }
  }

  c10::Allocator* fallback_ = c10::GetDefaultCPUAllocator();
  mutable std::mutex mu_;
  std::multimap<size_t, Cached> free_;
  std::unordered_map<void*, size_t> live_;
  int64_t hits_ = 0, misses_ = 0, live_bytes_ = 0, cached_bytes_ = 0, limit_ = 0;
  uint64_t frees_ = 0;
};

}  // namespace

void install_cpu_block_cache(int64_t limit_bytes) {
  static std::once_flag installed;
  CachingCpuAllocator& a = CachingCpuAllocator::instance();
  a.set_limit(std::max<int64_t>(0, limit_bytes));  // 0 once installed: every freed block is unmapped
  if (limit_bytes <= 0) return;
  // Above the priority ATen registers its default allocator with, so nothing later replaces it.
  std::call_once(installed, [&a] { c10::SetCPUAllocator(&a, /*priority=*/1); });
}

int64_t cpu_block_cache_limit(const char* mib, int64_t physical_bytes) {
  if (mib && *mib) {
    char* end = nullptr;
    const long long n = std::strtoll(mib, &end, 10);
    if (end && *end == '\0' && n >= 0) return static_cast<int64_t>(n) << 20;
    throw Error(std::string("ROLL_CPU_BLOCK_CACHE_MB must be a whole number of MiB (0 disables the cache), not '") +
                mib + "'");
  }
  return physical_bytes / 4;
}

int64_t cpu_block_cache_limit_from_env() {
  return cpu_block_cache_limit(std::getenv("ROLL_CPU_BLOCK_CACHE_MB"), physical_memory_bytes());
}

void release_cpu_block_cache() { CachingCpuAllocator::instance().release_all(); }

CpuBlockCacheStats cpu_block_cache_stats() { return CachingCpuAllocator::instance().stats(); }

}  // namespace roll::core
