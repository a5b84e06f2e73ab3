#pragma once
// Every worker process this driver started, process-wide, so that a signal, an exit or a failure
// anywhere can stop them all (no orphans).
#include <sys/types.h>

namespace roll::runtime {

void register_worker_pid(pid_t pid);
void unregister_worker_pid(pid_t pid);
// True once the driver began stopping everything: worker exits are then expected, not failures.
bool worker_exit_expected();

}  // namespace roll::runtime
