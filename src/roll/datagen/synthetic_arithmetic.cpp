// `roll data arithmetic` and the pieces both generators share (split hash, options, JSONL output).
#include <fmt/format.h>

#include <fstream>
#include <set>

#include "roll/core/rng.h"
#include "roll/core/error.h"
#include "roll/datagen/synthetic_data.h"

namespace roll::pipeline {
namespace {

constexpr int kMaxDigits = 9;  // products of two 9-digit numbers still fit in int64

int64_t operand(SeededRng& rng, int digits) {
  const int k = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(digits)));
  if (k == 1) return static_cast<int64_t>(rng.below(10));
  int64_t lo = 1;
  for (int i = 1; i < k; ++i) lo *= 10;
  return rng.range(lo, lo * 10);
}

}  // namespace

void check_synthetic_options(const SyntheticDataOptions& o) {
  if (o.split != "train" && o.split != "test") throw Error(fmt::format("--split must be train or test, got '{}'", o.split));
  if (o.n < 0) throw Error(fmt::format("--n must be >= 0, got {}", o.n));
}

std::string split_of(std::string_view key) {
  // FNV-1a, then a murmur-style finaliser so that every bit of the hash depends on every byte.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h % 5 == 0 ? "test" : "train";
}

std::vector<nlohmann::ordered_json> arithmetic_rows(const SyntheticDataOptions& o) {
  check_synthetic_options(o);
  if (o.digits < 1 || o.digits > kMaxDigits)
    throw Error(fmt::format("--digits must be in 1..{}, got {}", kMaxDigits, o.digits));
  static const char* const kPhrasings[] = {"What is {}?", "Compute {}.", "Calculate the value of {}."};
  SeededRng rng(o.seed);
  std::vector<nlohmann::ordered_json> rows;
  std::set<std::string> seen;
  const int64_t max_draws = 100 * o.n + 10000;
  for (int64_t draw = 0; static_cast<int64_t>(rows.size()) < o.n; ++draw) {
    if (draw >= max_draws)
      throw Error(fmt::format("only {} distinct {} problems with --digits {} were found in {} draws; lower --n or raise "
                              "--digits",
                              rows.size(), o.split, o.digits, max_draws));
    const int op = static_cast<int>(rng.below(3));
    const int64_t a = operand(rng, o.digits), b = operand(rng, o.digits);
    const uint64_t phrasing = rng.below(3);
    const char symbol = "+-*"[op];
    const std::string problem = fmt::format("{} {} {}", a, symbol, b);
    if (split_of(problem) != o.split || !seen.insert(problem).second) continue;
    const int64_t answer = op == 0 ? a + b : op == 1 ? a - b : a * b;
    const std::string question = fmt::format(fmt::runtime(kPhrasings[phrasing]), problem);
    nlohmann::ordered_json row;
    row["id"] = fmt::format("arithmetic-{}-{}-{}", o.split, o.seed, rows.size());
    row["messages"] = nlohmann::ordered_json::array(
        {{{"role", "user"}, {"content", question + " Put your final answer within \\boxed{}."}}});
    if (o.with_answer) row["messages"].push_back({{"role", "assistant"}, {"content", fmt::format("\\boxed{{{}}}", answer)}});
    row["ground_truth"] = std::to_string(answer);
    row["tag"] = "arithmetic";
    row["domain"] = "math_rule";
    rows.push_back(std::move(row));
  }
  return rows;
}

void write_jsonl(const std::string& path, const std::vector<nlohmann::ordered_json>& rows) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot write", path));
  for (const auto& row : rows) out << row.dump() << '\n';
  out.flush();
  if (!out) throw Error(fmt::format("{}: write failed", path));
}

}  // namespace roll::pipeline
