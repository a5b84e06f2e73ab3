// `roll data distill`: question/answer rows for the logit-distillation pipeline, made from the
// arithmetic problems (the same problems and splits as `roll data arithmetic`): the user turn in
// `question`, the exact answer as \boxed{N} in `answer` (DistillConfig's default question_key and
// answer_key).
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/datagen/synthetic_data.h"

namespace roll::pipeline {

std::vector<nlohmann::ordered_json> distill_rows(const SyntheticDataOptions& o) {
  std::vector<nlohmann::ordered_json> rows;
  for (const auto& problem : arithmetic_rows(o)) {
    const auto& messages = problem.at("messages");
    if (messages.empty()) throw Error("distill_rows: an arithmetic row without a user turn");
    nlohmann::ordered_json row;
    row["question"] = messages.back().at("content");
    row["answer"] = fmt::format("\\boxed{{{}}}", problem.at("ground_truth").get<std::string>());
    row["tag"] = "distill";
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace roll::pipeline
