#include "roll/runtime/cluster_state.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/core/json_number.h"

namespace roll::runtime {

std::string HostPort::str() const { return fmt::format("{}:{}", host, port); }

HostPort parse_host_port(const std::string& text, const std::string& what) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw Error(fmt::format("{}='{}' is not HOST:PORT (e.g. 10.0.0.1:6379)", what, text));
  const std::string port = text.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stol(port) < 1 ||
      std::stol(port) > 65535)
    throw Error(fmt::format("{}='{}': port '{}' is not a number in [1, 65535]", what, text, port));
  return {text.substr(0, colon), static_cast<uint16_t>(std::stol(port))};
}

const char* daemon_role_name(DaemonRole role) { return role == DaemonRole::head ? "head" : "agent"; }

DaemonRecord this_daemon(DaemonRole role, const std::string& address, const std::string& log_file) {
  DaemonRecord r;
  r.role = role;
  r.pid = getpid();
  r.address = address;
  r.log_file = log_file;
  return r;
}

std::string cluster_dir(const comm::EnvLookup& env) { return env("ROLL_CLUSTER_DIR").value_or("/tmp/rollcpp"); }

std::string state_file(const std::string& dir, DaemonRole role) {
  return (std::filesystem::path(dir) / (std::string(daemon_role_name(role)) + ".json")).string();
}

std::string daemon_record_json(const DaemonRecord& r) {
  nlohmann::json j{{"role", daemon_role_name(r.role)}, {"pid", r.pid}, {"address", r.address},
                   {"log_file", r.log_file}};
  if (r.role == DaemonRole::head) j["dashboard_port"] = r.dashboard_port;
  if (r.role == DaemonRole::agent) j["node_id"] = r.node_id;
  return j.dump(1);
}

DaemonRecord parse_daemon_record(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not JSON ({}); remove it if no `roll start` daemon runs", source, e.what()));
  }
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key))
      throw Error(fmt::format("{}: key '{}' is missing; remove the file if no `roll start` daemon runs", source, key));
    return j[key];
  };
  DaemonRecord r;
  try {
    const std::string role = field("role").get<std::string>();
    if (role != "head" && role != "agent")
      throw Error(fmt::format("{}: role '{}' is neither 'head' nor 'agent'", source, role));
    r.role = role == "head" ? DaemonRole::head : DaemonRole::agent;
    r.pid = json_integer<pid_t>(field("pid"), source + ": pid");
    if (r.pid <= 0) throw Error(fmt::format("{}: pid {} is not a process id", source, r.pid));
    r.address = field("address").get<std::string>();
    parse_host_port(r.address, source + ": address");
    r.log_file = j.value("log_file", "");
    if (r.role == DaemonRole::head)
      r.dashboard_port = json_integer_or<uint16_t>(j, "dashboard_port", 0, source + ": dashboard_port");
    if (r.role == DaemonRole::agent) r.node_id = json_integer<int>(field("node_id"), source + ": node_id");
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: a value has the wrong type ({})", source, e.what()));
  }
  return r;
}

std::optional<DaemonRecord> read_daemon_record(const std::string& dir, DaemonRole role) {
  const std::string path = state_file(dir, role);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  DaemonRecord r = parse_daemon_record(ss.str(), path);
  if (r.role != role) throw Error(fmt::format("{}: role '{}' in the {} file", path, daemon_role_name(r.role),
                                              daemon_role_name(role)));
  return r;
}

void write_daemon_record(const std::string& dir, const DaemonRecord& r) {
  std::filesystem::create_directories(dir);
  const std::string path = state_file(dir, r.role), tmp = fmt::format("{}.{}.tmp", path, getpid());
  {
    std::ofstream out(tmp);
    out << daemon_record_json(r) << "\n";
    if (!out) throw Error(fmt::format("cannot write {}", tmp));
  }
  std::filesystem::rename(tmp, path);
}

void remove_daemon_record(const std::string& dir, DaemonRole role) {
  std::error_code ec;
  std::filesystem::remove(state_file(dir, role), ec);
}

bool roll_process_alive(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "pid (comm) S ...": the state follows the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] == 'Z' || line[close + 2] == 'X')
    return false;
  return line.substr(line.find('(') + 1, close - line.find('(') - 1) == "roll";
}

}  // namespace roll::runtime
