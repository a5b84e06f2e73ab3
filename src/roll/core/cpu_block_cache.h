#pragma once
// ATen's CPU allocator with a cache of large freed blocks (docs/training.md, "Large CPU blocks").
// A training step allocates and frees the same large tensors every micro-batch (the LM head's
// [vocab, hidden] gradients, chunk logits, activations); from the system each would be a fresh
// mapping that the kernel faults in and zeroes page by page, a third of a 0.5B fp32 step's time.
// Blocks of kMinCachedBytes and more are kept when freed and handed to the next allocation that
// fits them (at most a quarter smaller); smaller ones go to ATen's default allocator as before.
#include <cstdint>

namespace roll::core {

inline constexpr int64_t kMinCachedBytes = int64_t{1} << 20;

struct CpuBlockCacheStats {
  int64_t hits = 0;          // large allocations served from the cache
  int64_t misses = 0;        // large allocations mapped fresh
  int64_t live_bytes = 0;    // large blocks held by tensors now
  int64_t cached_bytes = 0;  // freed large blocks kept for reuse
  int64_t limit_bytes = 0;   // the most cached_bytes may reach (the oldest blocks are unmapped first)
};

// Makes the cache ATen's CPU allocator for the rest of the process (tensors allocated before keep
// their own deleters). `limit_bytes` caps the freed bytes kept; 0 installs nothing. Calling it
// again only changes the limit (0 then keeps nothing).
void install_cpu_block_cache(int64_t limit_bytes);

// The limit a value of ROLL_CPU_BLOCK_CACHE_MB asks for (0 disables the cache; null or empty: a
// quarter of `physical_bytes`). Throws Error naming the variable for anything else.
int64_t cpu_block_cache_limit(const char* mib, int64_t physical_bytes);
// The same for this process's environment and machine.
int64_t cpu_block_cache_limit_from_env();

// Unmaps every cached block (a worker about to give its memory to another role).
void release_cpu_block_cache();

CpuBlockCacheStats cpu_block_cache_stats();

}  // namespace roll::core
