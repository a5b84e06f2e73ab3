#include "roll/workers/register_roles.h"

namespace roll::workers {

void register_builtin_roles() {
  register_infer_role();
  register_env_role();
}

}  // namespace roll::workers
