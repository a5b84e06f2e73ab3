// libFuzzer's entry point for an executable built from exactly one target file.
#include <cstdio>
#include <cstdlib>

#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& all = roll::fuzz::targets();
  if (all.size() != 1) {
    std::fprintf(stderr, "a libFuzzer executable holds one target; this one holds %zu\n", all.size());
    std::abort();
  }
  (void)roll::fuzz::run_target(all.front(), std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
