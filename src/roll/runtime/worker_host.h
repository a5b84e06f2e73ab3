#pragma once
// The worker side of a run (docs/design.md section 3): `roll worker` (or a test binary) started by the
// driver with a WorkerLaunch in its environment. It dies with the driver, logs to ROLL's per-rank
// file, sets its thread count, joins the store, loads the job's config when the driver published
// one, creates its role, publishes its RPC endpoint and serves until told to stop.
namespace roll::runtime {

// Returns the process exit code. A failure before serving (bad role, bad config, role
// constructor error) is logged, published under failure_key() for the driver, and returns 1.
int run_worker_host();

}  // namespace roll::runtime
