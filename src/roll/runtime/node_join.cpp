#include "roll/runtime/node_join.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"

namespace roll::runtime {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds seconds_var(const comm::EnvLookup& env, const char* name, double def) {
  double s = def;
  if (auto v = env(name)) {
    try {
      size_t used = 0;
      s = std::stod(*v, &used);
      if (used != v->size() || !(s > 0)) throw std::invalid_argument(*v);
    } catch (const std::exception&) {
      throw Error(fmt::format("{}='{}' is not a positive number of seconds", name, *v));
    }
  }
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

// One TCP connect to host:port, bounded by `timeout` (an unreachable address must not block
// for the kernel's minutes-long SYN retries).
bool tcp_reachable(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) return false;
  bool ok = false;
  for (addrinfo* a = res; a && !ok; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int r = connect(fd, a->ai_addr, a->ai_addrlen);
    if (r == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        ok = err == 0;
      }
    }
    close(fd);
  }
  freeaddrinfo(res);
  return ok;
}

}  // namespace

NodeInfo this_node(const NodeIdentity& id, int devices, const std::string& device_key) {
  NodeInfo n;
  n.rank = id.rank;
  n.world_size = id.world_size;
  NodeAddress a = node_address(comm::process_env(), id);
  n.address = a.address;
  n.worker_id = id.worker_id;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) n.hostname = host;
  n.devices = devices;
  n.cores = static_cast<int>(std::thread::hardware_concurrency());
  n.device_key = device_key;
  log::info("node {} of {}: address {} (from {}), {} {} device(s), {} cores", id.rank, id.world_size, n.address,
            a.source, devices, device_key, n.cores);
  return n;
}

std::chrono::milliseconds head_wait_timeout(const comm::EnvLookup& env) {
  return seconds_var(env, "ROLL_HEAD_WAIT_TIMEOUT", 600);
}
std::chrono::milliseconds heartbeat_timeout(const comm::EnvLookup& env) {
  return seconds_var(env, "ROLL_HEARTBEAT_TIMEOUT", 60);
}

std::shared_ptr<comm::Store> host_head_store(const NodeIdentity& id) {
  // The server listens on every interface; its own client reaches it over loopback.
  auto store = comm::Store::tcp({"127.0.0.1", id.master_port, true, std::chrono::seconds(60)});
  log::info("Starting roll cluster: head store on every interface at port {} (MASTER_ADDR {}, node 0 of {})",
            store->port(), id.master_addr, id.world_size);
  return store;
}

std::shared_ptr<comm::Store> wait_for_head(const NodeIdentity& id, std::chrono::milliseconds timeout,
                                           std::chrono::milliseconds op_timeout) {
  const std::string at = fmt::format("{}:{}", id.master_addr, id.master_port);
  log::info("Waiting for roll head node at {} to become available...", at);
  const auto t0 = Clock::now(), deadline = t0 + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (tcp_reachable(id.master_addr, id.master_port,
                      std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(2000)))) {
      log::info("roll head node at {} is ready (took {:.1f}s)",
                at, std::chrono::duration<double>(Clock::now() - t0).count());
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline)
      throw Error(fmt::format("roll head node at {} did not become available within {:.0f}s "
                              "(ROLL_HEAD_WAIT_TIMEOUT; check MASTER_ADDR, MASTER_PORT and that RANK=0 runs)",
                              at, std::chrono::duration<double>(timeout).count()));
    std::this_thread::sleep_until(std::min(deadline, now + std::chrono::seconds(2)));
  }
  log::info("Starting roll cluster: node {} joins {}", id.rank, at);
  return comm::Store::tcp({id.master_addr, id.master_port, false, op_timeout});
}

std::vector<NodeInfo> join_nodes(comm::Store& store, const NodeInfo& self, std::chrono::milliseconds timeout) {
  const auto t0 = Clock::now();
  const std::string claim = fmt::format("nodes/{}/claimed", self.rank);
  if (store.add(claim, 1) != 1)
    throw Error(fmt::format("RANK={}: another node already joined with this rank (each node needs its own RANK)",
                            self.rank));
  store.set(node_keys::info(self.rank), self.to_json().dump());
  store.add(node_keys::kJoined, 1);
  for (;;) {
    const int joined = static_cast<int>(store.add(node_keys::kJoined, 0));
    if (joined >= self.world_size) break;
    if (timeout.count() > 0 && Clock::now() - t0 > timeout)
      throw Error(fmt::format("only {} of {} nodes joined within {:.0f} s (ROLL_HEAD_WAIT_TIMEOUT): a node agent of "
                              "the cluster did not take the job (see its log, `roll status`)",
                              joined, self.world_size, std::chrono::duration<double>(timeout).count()));
    log::info("{}", join_progress_line(joined, self.world_size));
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::vector<NodeInfo> nodes;
  for (int k = 0; k < self.world_size; ++k) {
    NodeInfo n = NodeInfo::parse(store.get(node_keys::info(k)), node_keys::info(k));
    if (n.world_size != self.world_size)
      throw Error(fmt::format("{} runs with WORLD_SIZE={} but {} has WORLD_SIZE={}", n.describe(), n.world_size,
                              self.describe(), self.world_size));
    nodes.push_back(std::move(n));
  }
  log::info("{}", cluster_resources_line(nodes));
  return nodes;
}

}  // namespace roll::runtime
