#include "roll/runtime/worker_host.h"

#include <ATen/Parallel.h>
#include <malloc.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/core/log_sinks.h"
#include "roll/core/thread_stacks.h"
#include "roll/runtime/child_process.h"
#include "roll/runtime/config_request.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/runtime/worker_launch.h"

namespace roll::runtime {

int run_worker_host() {
  WorkerLaunch launch;
  try {
    launch = WorkerLaunch::from_env();
  } catch (const std::exception& e) {
    log::error("{}", e.what());
    return 2;
  }
  die_with_parent(launch.driver_pid);
  core::install_thread_stack_handler();  // the `__stacks` built-in of the hang watchdog
  // A peer that dies mid-collective closes its sockets, and Gloo's next write raises SIGPIPE,
  // whose default action would kill this worker before the failure is reported (the job's error
  // then names this worker, not the lost peer). Ignored, the write fails with EPIPE and the call
  // fails with Gloo's "connection closed by peer <address>", which names the node. Processes this
  // worker spawns get the default back (posix_spawn with POSIX_SPAWN_SETSIGDEF).
  std::signal(SIGPIPE, SIG_IGN);
  // Tensors are allocated and freed every micro-batch. Above glibc's mmap threshold each one is a
  // fresh mmap whose pages the kernel faults in and zeroes (most of a small model's train time).
  // Blocks of 1 MiB and more come from the CPU block cache (core/cpu_block_cache.h, installed by
  // main unless ROLL_CPU_BLOCK_CACHE_MB=0); below that, and without the cache, the threshold is
  // raised to its maximum and the heap is not trimmed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  log::set_identity(launch.worker_name, launch.rank, launch.world_size);
  std::shared_ptr<comm::Store> store;
  try {
    log::add_file(launch.log_file());
    at::set_num_threads(launch.threads);
    store = comm::Store::tcp({launch.store_host, launch.store_port, false, std::chrono::seconds(60)});
  } catch (const std::exception& e) {
    log::error("worker start failed: {}", e.what());
    log::flush();
    return 1;
  }

  try {
    WorkerContext ctx;
    ctx.cluster = launch.cluster;
    ctx.role = launch.role;
    ctx.worker_name = launch.worker_name;
    ctx.rank = launch.rank;
    ctx.world_size = launch.world_size;
    ctx.node_rank = launch.node_rank;
    ctx.threads = launch.threads;
    ctx.local_devices = launch.local_devices;
    ctx.log_dir = launch.log_dir;
    ctx.run_dir = launch.run_dir;
    ctx.store = store;
    ctx.options = launch.options;
    if (store->check({kConfigRequestKey}))
      ctx.config = config::load_config(config_request_from_json(nlohmann::json::parse(store->get(kConfigRequestKey))));

    std::unique_ptr<Role> role = make_role(launch.role, ctx);
    RpcServer server("tcp://" + launch.bind_host + ":*");
    role->bind(server);
    log::info("worker {} ({}) serving at {} with {} thread(s)", launch.worker_name, launch.role, server.endpoint(),
              launch.threads);
    store->set(endpoint_key(launch.cluster, launch.rank), server.endpoint());
    server.serve();
    log::info("worker {} stopping", launch.worker_name);
    role.reset();
    log::flush();
    return 0;
  } catch (const std::exception& e) {
    log::error("worker {} failed: {}", launch.worker_name, e.what());
    log::flush();
    try {
      store->set(failure_key(launch.cluster, launch.rank), e.what());
    } catch (const std::exception&) {
    }
    return 1;
  }
}

}  // namespace roll::runtime
