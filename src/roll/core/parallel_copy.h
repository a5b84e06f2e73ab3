#pragma once
// memcpy of many regions at memory speed: the regions are cut into pieces that ATen's threads
// share, so one large tensor (a 0.5B model's embedding is a quarter of it) is not one thread's job.
#include <cstdint>
#include <vector>

namespace roll::core {

struct CopyPiece {
  void* dst;
  const void* src;
  int64_t bytes;
};

// Appends the copy of `bytes` bytes from src to dst, cut into pieces of at most 4 MB.
void add_copy(std::vector<CopyPiece>& pieces, void* dst, const void* src, int64_t bytes);
// Runs every piece, spread over ATen's threads.
void copy_in_parallel(const std::vector<CopyPiece>& pieces);

}  // namespace roll::core
