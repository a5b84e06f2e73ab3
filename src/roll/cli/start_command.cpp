// `roll start --head --port=P [--dashboard-port=D]` and `roll start --address=HOST:P`: the seed's
// Method B, Ray's `ray start`. Starts a detached head daemon or node agent on this machine
// (runtime/cluster_daemon.h) and returns once it is ready; `--block` runs it in the foreground.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <thread>

#include "roll/cli/commands.h"
#include "roll/config/platform.h"
#include "roll/core/error.h"
#include "roll/runtime/cluster_daemon.h"
#include "roll/runtime/daemon_process.h"
#include "roll/runtime/node_join.h"

namespace roll::cli {
namespace {

struct StartOptions {
  bool head = false;
  std::string address;
  uint16_t port = 6379;
  uint16_t dashboard_port = 8265;
  int num_gpus = -1;
  std::string node_ip;
  bool block = false;
};

// --num-gpus, else the accelerators this machine has, else (cpu, npu-emulated: a "device" is a
// slot of cores) one per core.
void fill_devices(runtime::DaemonOptions& d, int num_gpus) {
  const config::Platform p = config::default_platform();
  d.device_key = config::platform_rules(p).device_key;
  if (num_gpus >= 0) {
    d.devices = num_gpus;
  } else if (auto n = config::detected_device_count(p)) {
    d.devices = *n;
  } else {
    d.devices = static_cast<int>(std::thread::hardware_concurrency());
  }
}

std::vector<std::string> foreground_argv(const StartOptions& o) {
  std::vector<std::string> a = {std::filesystem::read_symlink("/proc/self/exe").string(), "start", "--block"};
  if (o.head) {
    a.insert(a.end(), {"--head", fmt::format("--port={}", o.port), fmt::format("--dashboard-port={}", o.dashboard_port)});
    if (!o.node_ip.empty()) a.push_back("--node-ip-address=" + o.node_ip);
  } else {
    a.push_back("--address=" + o.address);
  }
  if (o.num_gpus >= 0) a.push_back(fmt::format("--num-gpus={}", o.num_gpus));
  return a;
}

int run_start(const StartOptions& o) {
  if (o.head == !o.address.empty())
    throw Error("roll start: give either --head (start the cluster's head here) or --address=HOST:PORT (join one)");
  const comm::EnvLookup env = comm::process_env();
  const std::string dir = runtime::cluster_dir(env);
  std::filesystem::create_directories(dir);
  const runtime::DaemonRole role = o.head ? runtime::DaemonRole::head : runtime::DaemonRole::agent;
  const std::string log_file = (std::filesystem::path(dir) / (std::string(runtime::daemon_role_name(role)) + ".log")).string();
  const auto heartbeat = runtime::heartbeat_timeout(env);
  const auto head_wait = runtime::head_wait_timeout(env);
  runtime::HostPort head;
  if (!o.head) head = runtime::parse_host_port(o.address, "--address");
  if (!o.block) {
    runtime::ensure_no_daemon(dir, role);
    const std::string said = runtime::start_detached(foreground_argv(o), log_file,
                                                     o.head ? std::chrono::seconds(30) : head_wait + std::chrono::seconds(30));
    std::cout << "roll runtime started.\n--------------------\n";
    if (o.head) {
      std::cout << fmt::format(
          "Next steps\n"
          "  To add another node to this roll cluster, run\n    roll start --address='{}'\n"
          "  To run a pipeline on the cluster, run it on this machine (or set ROLL_ADDRESS={}):\n"
          "    roll rlvr --config_path <dir> --config_name <name>\n"
          "  To terminate the roll runtime, run\n    roll stop\n"
          "  To view the status of the cluster, use\n    roll status\n"
          "Log: {}\n",
          said, said, log_file);
    } else {
      std::cout << fmt::format("{}\nTo terminate the roll runtime, run\n  roll stop\nLog: {}\n", said, log_file);
    }
    return 0;
  }
  runtime::DaemonOptions d;
  d.state_dir = dir;
  d.log_file = log_file;
  d.ready_fd = runtime::ready_fd_from_env();
  d.heartbeat_timeout = heartbeat;
  d.head_wait_timeout = head_wait;
  fill_devices(d, o.num_gpus);
  if (o.head) {
    runtime::HeadDaemonOptions h;
    static_cast<runtime::DaemonOptions&>(h) = d;
    h.port = o.port;
    h.dashboard_port = o.dashboard_port;
    h.node_ip = o.node_ip;
    return runtime::run_head_daemon(h);
  }
  runtime::AgentDaemonOptions a;
  static_cast<runtime::DaemonOptions&>(a) = d;
  a.head = head;
  a.worker_command = {std::filesystem::read_symlink("/proc/self/exe").string(), "worker"};
  return runtime::run_agent_daemon(a);
}

}  // namespace

void register_start(CLI::App& app) {
  auto o = std::make_shared<StartOptions>();
  auto* cmd = app.add_subcommand("start", "Start a manual cluster's head (--head) or join one (--address), as `ray start`");
  cmd->add_flag("--head", o->head, "Start the head of a cluster on this machine");
  cmd->add_option("--address", o->address, "Join the cluster whose head is at HOST:PORT");
  cmd->add_option("--port", o->port, "The head's port (the cluster store; Ray's GCS port)")->capture_default_str();
  cmd->add_option("--dashboard-port", o->dashboard_port, "Head: the port the jobs of this cluster serve their dashboard on (docs/dashboard.md)")->capture_default_str();
  cmd->add_option("--num-gpus", o->num_gpus,
                  "Devices this node offers (default: the accelerators found; on cpu one slot per core)");
  cmd->add_option("--node-ip-address", o->node_ip, "The head's address agents reach (default: the first interface's)");
  cmd->add_flag("--block", o->block, "Run in the foreground instead of detached");
  cmd->callback([o] {
    try {
      set_exit_code(run_start(*o));
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
