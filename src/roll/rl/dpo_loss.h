#pragma once
// ROLL's DPO loss (roll/pipeline/dpo/actor_worker.py, docs/dpo.md) on the summed response log-probs
// of each pair: with h = (π_c − π_r) − (ref_c − ref_r),
//   sigmoid (cDPO with label smoothing ε):  −log σ(β·h)·(1 − ε) − log σ(−β·h)·ε
//   IPO:                                    (h − 1/(2β))²
// and the implicit rewards β(π_c − ref_c), β(π_r − ref_r) (detached). A pair counts as correct
// (ROLL's actor/acc) when its chosen reward is strictly greater than its rejected one.
#include <ATen/core/Tensor.h>

namespace roll::rl {

struct DpoLossOptions {
  double beta = 0.1;
  double label_smoothing = 0.0;
  bool ipo = false;
};

struct DpoLoss {
  at::Tensor losses;            // [P], differentiable in the policy log-probs
  at::Tensor chosen_rewards;    // [P], detached
  at::Tensor rejected_rewards;  // [P], detached
};

// Each input [P]: the sequence log-probs (sums over response tokens) of the pairs' chosen and
// rejected responses under the policy and the reference. Shapes must agree (roll::Error otherwise).
DpoLoss dpo_loss(const at::Tensor& policy_chosen, const at::Tensor& policy_rejected, const at::Tensor& ref_chosen,
                 const at::Tensor& ref_rejected, const DpoLossOptions& options);

}  // namespace roll::rl
