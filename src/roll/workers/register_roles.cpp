#include "roll/workers/register_roles.h"

namespace roll::workers {

void register_builtin_roles() {
  register_infer_role();
  register_reward_role();
  register_actor_train_role();
  register_critic_role();
  register_reference_role();
  register_sft_train_role();
  register_dpo_train_role();
  register_student_role();
  register_teacher_role();
  register_env_role();
}

}  // namespace roll::workers
