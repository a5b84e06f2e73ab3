// `roll data preference`: preference pairs for the DPO pipeline. "What is A + B?" with a helpful
// chosen answer in one style ("The answer is C.") and an unhelpful or wrong rejected answer in
// another ("I don't know.", "No idea, sorry.", "Maybe D?"), so that a tiny model learns the
// preference in a few steps and the held-out split tests it on problems it has not seen.
#include <fmt/format.h>

#include <set>

#include "roll/core/error.h"
#include "roll/core/rng.h"
#include "roll/datagen/synthetic_data.h"

namespace roll::pipeline {
namespace {

constexpr int64_t kMaxOperand = 99;  // operands 0..99: 10000 problems, about 2000 of them in test

}  // namespace

std::vector<nlohmann::ordered_json> preference_rows(const SyntheticDataOptions& o) {
  check_synthetic_options(o);
  SeededRng rng(o.seed);
  std::vector<nlohmann::ordered_json> rows;
  std::set<std::string> seen;
  const int64_t max_draws = 100 * o.n + 10000;
  for (int64_t draw = 0; static_cast<int64_t>(rows.size()) < o.n; ++draw) {
    if (draw >= max_draws)
      throw Error(fmt::format("only {} distinct {} preference problems were found in {} draws; lower --n", rows.size(),
                              o.split, max_draws));
    // Every draw takes the same numbers from the stream, kept or not, so rows depend only on the seed.
    const int64_t a = rng.range(0, kMaxOperand + 1), b = rng.range(0, kMaxOperand + 1);
    const uint64_t style = rng.below(3);
    const int64_t magnitude = rng.range(1, 4);  // separate statements: the draws' order is fixed
    const int64_t offset = rng.below(2) == 0 ? -magnitude : magnitude;  // +-1..3
    const std::string problem = fmt::format("{} + {}", a, b);
    if (split_of(problem) != o.split || !seen.insert(problem).second) continue;
    const int64_t sum = a + b;
    const int64_t wrong = sum + offset >= 0 ? sum + offset : sum - offset;  // a wrong sum, never negative
    nlohmann::ordered_json row;
    row["instruction"] = fmt::format("What is {}?", problem);
    row["chosen"] = fmt::format("The answer is {}.", sum);
    row["rejected"] = style == 0 ? std::string("I don't know.")
                      : style == 1 ? std::string("No idea, sorry.")
                                   : fmt::format("Maybe {}?", wrong);
    row["tag"] = "preference";
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace roll::pipeline
