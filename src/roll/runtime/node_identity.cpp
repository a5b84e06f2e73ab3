#include "roll/runtime/node_identity.h"

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::runtime {
namespace {

int64_t parse_int(const std::string& var, const std::string& v, int64_t lo, int64_t hi) {
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used);
    if (used == v.size() && x >= lo && x <= hi) return x;
  } catch (const std::exception&) {
  }
  throw Error(fmt::format("{}='{}' is not an integer in [{}, {}]", var, v, lo, hi));
}

// A Slurm host list split at the commas that are outside brackets.
std::vector<std::string> split_outside_brackets(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) throw Error(fmt::format("SLURM_NODELIST='{}': unbalanced ']'", s));
    if (c == ',' && depth == 0) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) throw Error(fmt::format("SLURM_NODELIST='{}': unbalanced '['", s));
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::vector<std::string> expand_slurm_nodelist(const std::string& list) {
  std::vector<std::string> hosts;
  for (const std::string& item : split_outside_brackets(list)) {
    size_t open = item.find('[');
    if (open == std::string::npos) {
      hosts.push_back(item);
      continue;
    }
    size_t close = item.find(']', open);
    const std::string prefix = item.substr(0, open), suffix = item.substr(close + 1);
    if (suffix.find('[') != std::string::npos)
      throw Error(fmt::format("SLURM_NODELIST='{}': more than one bracket range in '{}' is not supported", list, item));
    const std::string body = item.substr(open + 1, close - open - 1);
    for (size_t pos = 0; pos <= body.size();) {
      size_t comma = body.find(',', pos);
      if (comma == std::string::npos) comma = body.size();
      const std::string range = body.substr(pos, comma - pos);
      pos = comma + 1;
      size_t dash = range.find('-');
      const std::string a = range.substr(0, dash), b = dash == std::string::npos ? a : range.substr(dash + 1);
      auto digits = [](const std::string& s) {
        return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
      };
      if (!digits(a) || !digits(b))
        throw Error(fmt::format("SLURM_NODELIST='{}': '{}' is not a number or a range like 01-03", list, range));
      const long lo = std::stol(a), hi = std::stol(b);
      if (hi < lo) throw Error(fmt::format("SLURM_NODELIST='{}': range '{}' runs backwards", list, range));
      for (long n = lo; n <= hi; ++n) {
        std::string num = std::to_string(n);
        if (num.size() < a.size()) num.insert(0, a.size() - num.size(), '0');  // zero padding of the first bound
        hosts.push_back(prefix + num + suffix);
      }
    }
  }
  return hosts;
}

NodeIdentity node_identity(const comm::EnvLookup& env) {
  NodeIdentity id;
  auto take = [&](const char* rank_var, const char* size_var) {
    auto r = env(rank_var);
    if (!r) return false;
    id.rank_source = rank_var;
    id.rank = static_cast<int>(parse_int(rank_var, *r, 0, 1 << 20));
    if (auto w = env(size_var)) id.world_size = static_cast<int>(parse_int(size_var, *w, 1, 1 << 20));
    return true;
  };
  if (!take("RANK", "WORLD_SIZE") && !take("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE") &&
      !take("SLURM_PROCID", "SLURM_NTASKS")) {
    id.rank_source = "default";
    if (auto w = env("WORLD_SIZE")) id.world_size = static_cast<int>(parse_int("WORLD_SIZE", *w, 1, 1 << 20));
  }
  if (id.rank >= id.world_size) {
    const char* size_var = id.rank_source == "OMPI_COMM_WORLD_RANK" ? "OMPI_COMM_WORLD_SIZE"
                           : id.rank_source == "SLURM_PROCID"       ? "SLURM_NTASKS"
                                                                    : "WORLD_SIZE";
    throw Error(fmt::format("{}={} is not below {}={} (node ranks are 0 .. {}-1)", id.rank_source, id.rank, size_var,
                            id.world_size, size_var));
  }
  if (auto a = env("MASTER_ADDR")) {
    id.master_addr = *a;
  } else if (id.rank_source == "SLURM_PROCID") {
    if (auto list = env("SLURM_NODELIST")) {
      auto hosts = expand_slurm_nodelist(*list);
      if (hosts.empty()) throw Error(fmt::format("SLURM_NODELIST='{}' names no host", *list));
      id.master_addr = hosts.front();
    }
  }
  if (auto p = env("MASTER_PORT")) id.master_port = static_cast<uint16_t>(parse_int("MASTER_PORT", *p, 1, 65535));
  if (auto p = env("DASHBOARD_PORT"))
    id.dashboard_port = static_cast<uint16_t>(parse_int("DASHBOARD_PORT", *p, 1, 65535));
  id.worker_id = env("WORKER_ID").value_or(fmt::format("{}:{}", id.master_addr, id.rank));
  return id;
}

NodeAddress node_address(const comm::EnvLookup& env, const NodeIdentity& id) {
  if (!id.multi_node() && !env("GLOO_SOCKET_IFNAME") && !env("NCCL_SOCKET_IFNAME") && !env("HCCL_SOCKET_IFNAME") &&
      !env("HCCL_IF_IP"))
    return {"127.0.0.1", "single node"};
  // The runtime's own ROLL_BIND_HOST is for workers; a node decides from the user's variables.
  comm::EnvLookup user = [&env](const std::string& k) -> std::optional<std::string> {
    if (k == "ROLL_BIND_HOST") return std::nullopt;
    return env(k);
  };
  const comm::GlooDeviceSpec spec = comm::choose_gloo_devices(user, true, id.master_addr).front();
  const std::string source =
      spec.kind == comm::GlooDeviceSpec::Kind::route_to ? "route to MASTER_ADDR " + id.master_addr : spec.source;
  return {comm::local_ipv4_address(spec), source};
}

}  // namespace roll::runtime
