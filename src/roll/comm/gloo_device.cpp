#include "roll/comm/gloo_device.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "roll/core/error.h"

namespace roll::comm {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

// name -> IPv4 of every interface that is up and has one.
std::vector<std::pair<std::string, std::string>> local_ipv4_interfaces() {
  std::vector<std::pair<std::string, std::string>> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    out.emplace_back(i->ifa_name, buf);
  }
  freeifaddrs(list);
  return out;
}

std::string names_of(const std::vector<std::pair<std::string, std::string>>& ifs) {
  std::string s;
  for (const auto& [n, ip] : ifs) s += (s.empty() ? "" : ", ") + n + " (" + ip + ")";
  return s.empty() ? "none" : s;
}

// The local address the kernel would use to reach `host` (a UDP connect sends nothing).
std::string route_source_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "29500", &hints, &res) != 0 || !res)
    throw Error(fmt::format("Gloo device: cannot resolve MASTER_ADDR '{}' to pick the local interface; set "
                            "GLOO_SOCKET_IFNAME or HCCL_IF_IP",
                            host));
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  std::string out;
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char buf[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf);
      out = buf;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  if (out.empty())
    throw Error(fmt::format("Gloo device: no route towards MASTER_ADDR '{}'; set GLOO_SOCKET_IFNAME or HCCL_IF_IP",
                            host));
  return out;
}

}  // namespace

std::vector<GlooDeviceSpec> choose_gloo_devices(const EnvLookup& env, bool multi_node,
                                                const std::string& master_addr) {
  std::vector<GlooDeviceSpec> out;
  if (auto v = env("GLOO_SOCKET_IFNAME")) {
    for (const std::string& name : split_list(*v))
      out.push_back({GlooDeviceSpec::Kind::interface, name, false, "GLOO_SOCKET_IFNAME"});
    if (!out.empty()) return out;
  }
  // NCCL's and HCCL's forms: "eth" (prefix), "=eth0" (exact), "^=eth0" / "^eth" (exclusion).
  for (const char* var : {"NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"}) {
    auto v = env(var);
    if (!v) continue;
    for (const std::string& item : split_list(*v)) {
      if (item.front() == '^')
        throw Error(fmt::format("{}='{}': the exclusion form '^...' cannot choose a Gloo interface; "
                                "name the interface (for example GLOO_SOCKET_IFNAME=eth0)",
                                var, *v));
      if (item.front() == '=')
        out.push_back({GlooDeviceSpec::Kind::interface, item.substr(1), false, var});
      else
        out.push_back({GlooDeviceSpec::Kind::interface, item, true, var});
      break;  // one device: these lists are alternatives, not a set to stripe over
    }
    if (!out.empty()) return out;
  }
  if (auto v = env("HCCL_IF_IP")) {
    if (!is_ipv4(*v)) throw Error(fmt::format("HCCL_IF_IP='{}' is not an IPv4 address", *v));
    return {{GlooDeviceSpec::Kind::address, *v, false, "HCCL_IF_IP"}};
  }
  // A worker of a multi-node job binds where its node's runtime told it to (the node's address).
  if (auto v = env("ROLL_BIND_HOST")) {
    if (!is_ipv4(*v)) throw Error(fmt::format("ROLL_BIND_HOST='{}' is not an IPv4 address", *v));
    return {{GlooDeviceSpec::Kind::address, *v, false, "ROLL_BIND_HOST"}};
  }
  if (!multi_node) return {{GlooDeviceSpec::Kind::address, "127.0.0.1", false, "default"}};
  if (master_addr.empty())
    throw Error("Gloo device: several nodes but no MASTER_ADDR; set MASTER_ADDR or GLOO_SOCKET_IFNAME");
  return {{GlooDeviceSpec::Kind::route_to, master_addr, false, "default"}};
}

ResolvedGlooDevice resolve_gloo_device(const GlooDeviceSpec& spec) {
  switch (spec.kind) {
    case GlooDeviceSpec::Kind::address:
      return {false, spec.value};
    case GlooDeviceSpec::Kind::route_to:
      return {false, route_source_address(spec.value)};
    case GlooDeviceSpec::Kind::interface: {
      auto ifs = local_ipv4_interfaces();
      for (const auto& [name, ip] : ifs)
        if (name == spec.value) return {true, name};
      if (spec.prefix)
        for (const auto& [name, ip] : ifs)
          if (name.rfind(spec.value, 0) == 0) return {true, name};
      throw Error(fmt::format("{}='{}': no such interface with an IPv4 address on this machine (have: {})",
                              spec.source, spec.value, names_of(ifs)));
    }
  }
  return {};
}

std::string local_ipv4_address(const GlooDeviceSpec& spec) {
  ResolvedGlooDevice r = resolve_gloo_device(spec);
  if (!r.by_interface) return r.value;
  for (const auto& [name, ip] : local_ipv4_interfaces())
    if (name == r.value) return ip;
  throw Error(fmt::format("{}='{}': interface {} has no IPv4 address", spec.source, spec.value, r.value));
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

}  // namespace roll::comm
