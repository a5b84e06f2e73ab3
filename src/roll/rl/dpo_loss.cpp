#include "roll/rl/dpo_loss.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::rl {

DpoLoss dpo_loss(const at::Tensor& policy_chosen, const at::Tensor& policy_rejected, const at::Tensor& ref_chosen,
                 const at::Tensor& ref_rejected, const DpoLossOptions& o) {
  for (const at::Tensor* t : {&policy_rejected, &ref_chosen, &ref_rejected})
    if (!t->sizes().equals(policy_chosen.sizes()) || policy_chosen.dim() != 1)
      throw Error(fmt::format("dpo_loss: the four sequence log-prob vectors must have one shape [pairs], got {} {} {} {}",
                              c10::str(policy_chosen.sizes()), c10::str(policy_rejected.sizes()),
                              c10::str(ref_chosen.sizes()), c10::str(ref_rejected.sizes())));
  if (!(o.beta > 0)) throw ConfigError("beta", fmt::format("beta: must be > 0, got {}", o.beta));
  const at::Tensor h = (policy_chosen - policy_rejected) - (ref_chosen - ref_rejected);
  DpoLoss out;
  if (o.ipo) {
    out.losses = (h - 1.0 / (2.0 * o.beta)).pow(2);
  } else {
    out.losses = -at::log_sigmoid(o.beta * h) * (1.0 - o.label_smoothing) - at::log_sigmoid(-o.beta * h) * o.label_smoothing;
  }
  out.chosen_rewards = (o.beta * (policy_chosen - ref_chosen)).detach();
  out.rejected_rewards = (o.beta * (policy_rejected - ref_rejected)).detach();
  return out;
}

}  // namespace roll::rl
