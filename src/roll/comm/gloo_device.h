#pragma once
// Which network device Gloo binds to. Gloo's own default resolves the machine's hostname, which on
// Debian-style /etc/hosts gives 127.0.1.1 and hangs multi-node jobs; we bind to an interface
// name or a numeric address instead:
//   GLOO_SOCKET_IFNAME=eth0[,eth1]   interfaces (one Gloo device each, as torch does)
//   NCCL_SOCKET_IFNAME, HCCL_SOCKET_IFNAME=eth | =eth0  an interface, or a name prefix (first item)
//   HCCL_IF_IP=10.0.0.5              the seed's NPU variable: a local address
//   ROLL_BIND_HOST=10.0.0.5          set by the runtime for workers: their node's address
//   none of them: 127.0.0.1 on a single node; on several nodes the local address of the route
//   towards MASTER_ADDR.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace roll::comm {

struct GlooDeviceSpec {
  enum class Kind { interface, address, route_to };
  Kind kind = Kind::address;
  std::string value;   // interface name / prefix, IP address, or the master address to route towards
  bool prefix = false;  // HCCL_SOCKET_IFNAME without '=': first interface whose name starts with value
  std::string source;  // the variable it came from, or "default"
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Pure: reads only `env`. Errors (roll::Error) name the variable, e.g. HCCL's '^' exclusion form.
std::vector<GlooDeviceSpec> choose_gloo_devices(const EnvLookup& env, bool multi_node, const std::string& master_addr);

// A spec turned into something Gloo can bind: {by_interface, interface name or IPv4 address}.
// Prefixes and routes are resolved against this machine's interfaces; errors name the source.
struct ResolvedGlooDevice {
  bool by_interface = false;
  std::string value;
};
ResolvedGlooDevice resolve_gloo_device(const GlooDeviceSpec& spec);

// The IPv4 address a spec stands for (an interface's own address for interface specs).
std::string local_ipv4_address(const GlooDeviceSpec& spec);

EnvLookup process_env();  // getenv, empty values treated as unset

}  // namespace roll::comm
