#pragma once
// ROLL's DPOConfig (roll/pipeline/dpo/dpo_config.py): the loss's knobs and the dataset's column
// names of the preference pairs (docs/dpo.md). The prompt column is `instruction`, as in ROLL.
#include <string>

namespace roll::config {

struct DPOConfig {
  bool ipo = false;
  double beta = 0.1;
  double label_smoothing = 0.0;
  std::string chosen_key = "chosen";
  std::string rejected_key = "rejected";

  template <typename V>
  void visit(V& v) {
    v("ipo", ipo);
    v("beta", beta);
    v("label_smoothing", label_smoothing);
    v("chosen_key", chosen_key);
    v("rejected_key", rejected_key);
  }
};

}  // namespace roll::config
