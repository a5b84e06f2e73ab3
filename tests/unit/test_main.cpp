#include <gtest/gtest.h>

#include <cstring>

#include "roll/runtime/worker_host.h"
#include "roll/workers/register_roles.h"

// `roll_unit_tests --roll-worker` is a worker host serving the roles the test files register, so
// runtime tests start real worker processes without putting test roles into `roll`.
int main(int argc, char** argv) {
  roll::workers::register_builtin_roles();
  if (argc > 1 && std::strcmp(argv[1], "--roll-worker") == 0) return roll::runtime::run_worker_host();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
