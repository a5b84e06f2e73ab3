#include "roll/workers/register_roles.h"

namespace roll::workers {

void register_builtin_roles() {
  register_infer_role();
  register_reward_role();
  register_train_roles();
  register_env_role();
}

}  // namespace roll::workers
