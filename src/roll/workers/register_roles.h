#pragma once
// Registers the roles of workers/ with the runtime (docs/design.md section 2: runtime/ knows no role).
// `roll` calls register_builtin_roles() before it parses its command line; so do the tests.
namespace roll::workers {

void register_builtin_roles();

// One per role file.
void register_infer_role();
void register_reward_role();
void register_actor_train_role();
void register_critic_role();
void register_reference_role();
void register_sft_train_role();
void register_dpo_train_role();
void register_student_role();
void register_teacher_role();
void register_env_role();

}  // namespace roll::workers
