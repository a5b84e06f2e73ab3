#pragma once
// Fisher-Yates shuffle over rollcpp's seeded generator (core/rng.h): the same seed gives the
// same order on every build and platform, which std::shuffle does not promise. It is not Python's
// random.shuffle nor numpy's, so orders differ from ROLL's (docs/data.md).
#include <cstdint>
#include <utility>
#include <vector>

#include "roll/core/rng.h"

namespace roll::pipeline {

template <typename T>
void shuffle_in_place(std::vector<T>& values, SeededRng& rng) {
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[rng.below(i)]);
}

}  // namespace roll::pipeline
