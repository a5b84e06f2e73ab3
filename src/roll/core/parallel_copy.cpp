#include "roll/core/parallel_copy.h"

#include <algorithm>
#include <cstring>

#include "roll/core/parallel_for.h"

namespace roll::core {

namespace {
constexpr int64_t kPiece = int64_t{4} << 20;
}

void add_copy(std::vector<CopyPiece>& pieces, void* dst, const void* src, int64_t bytes) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  for (int64_t off = 0; off < bytes; off += kPiece) pieces.push_back({d + off, s + off, std::min(kPiece, bytes - off)});
}

void copy_in_parallel(const std::vector<CopyPiece>& pieces) {
  at::parallel_for(0, static_cast<int64_t>(pieces.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::memcpy(pieces[i].dst, pieces[i].src, static_cast<size_t>(pieces[i].bytes));
  });
}

}  // namespace roll::core
