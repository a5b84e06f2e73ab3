#include "roll/runtime/node_protocol.h"

#include <fmt/format.h>

#include <map>

#include "roll/core/error.h"
#include "roll/core/json_number.h"

namespace roll::runtime {

nlohmann::json NodeInfo::to_json() const {
  return {{"rank", rank},       {"world_size", world_size}, {"address", address}, {"worker_id", worker_id},
          {"hostname", hostname}, {"devices", devices},       {"cores", cores},     {"device_key", device_key}};
}

NodeInfo NodeInfo::from_json(const nlohmann::json& j) {
  NodeInfo n;
  n.rank = json_integer<int>(j.at("rank"), "rank");
  n.world_size = json_integer<int>(j.at("world_size"), "world_size");
  n.address = j.at("address").get<std::string>();
  n.worker_id = j.value("worker_id", "");
  n.hostname = j.value("hostname", "");
  n.devices = json_integer_or<int>(j, "devices", 0, "devices");
  n.cores = json_integer_or<int>(j, "cores", 0, "cores");
  n.device_key = j.value("device_key", "CPU");
  return n;
}

namespace {

template <typename T>
T parse_store_value(const std::string& text, const std::string& source) {
  auto malformed = [&](const char* why) {
    return Error(fmt::format("{} in the cluster store is malformed ({}): is that node a different rollcpp version?",
                             source, why));
  };
  try {
    return T::from_json(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception& e) {
    throw malformed(e.what());
  } catch (const Error& e) {  // a number out of range (json_integer)
    throw malformed(e.what());
  }
}

}  // namespace

NodeInfo NodeInfo::parse(const std::string& text, const std::string& source) {
  return parse_store_value<NodeInfo>(text, source);
}

std::string NodeInfo::describe() const {
  return hostname.empty() ? fmt::format("node {} ({})", rank, address)
                          : fmt::format("node {} ({}, host {})", rank, address, hostname);
}

nlohmann::json SpawnRequest::to_json() const { return {{"name", name}, {"settings", settings}}; }

SpawnRequest SpawnRequest::from_json(const nlohmann::json& j) {
  SpawnRequest r;
  r.name = j.at("name").get<std::string>();
  r.settings = j.at("settings").get<std::map<std::string, std::string>>();
  return r;
}

SpawnRequest SpawnRequest::parse(const std::string& text, const std::string& source) {
  return parse_store_value<SpawnRequest>(text, source);
}

namespace node_keys {
std::string info(int node) { return fmt::format("nodes/{}", node); }
std::string heartbeat(int node) { return fmt::format("nodes/{}/heartbeat", node); }
std::string spawn(int node, int index) { return fmt::format("nodes/{}/spawn/{}", node, index); }
std::string spawned(int node, int index) { return fmt::format("nodes/{}/spawned/{}", node, index); }
std::string kill(int node, int index) { return fmt::format("nodes/{}/kill/{}", node, index); }
std::string exit(int node, int index) { return fmt::format("nodes/{}/exit/{}", node, index); }
}  // namespace node_keys

std::string join_progress_line(int joined, int world_size) {
  return fmt::format("{} nodes have joined so far, waiting for {}.", joined, world_size - joined);
}

std::string cluster_resources_line(const std::vector<NodeInfo>& nodes) {
  // Ray's shape: a Python dict of resource -> amount, with one "node:<ip>" entry per node.
  std::map<std::string, double> totals;
  std::vector<std::string> node_entries;
  for (const auto& n : nodes) {
    totals["CPU"] += n.cores;
    if (n.device_key != "CPU") totals[n.device_key] += n.devices;
    node_entries.push_back(fmt::format("'node:{}': 1.0", n.address));
  }
  std::string s;
  for (const auto& [k, v] : totals) s += fmt::format("{}'{}': {:.1f}", s.empty() ? "" : ", ", k, v);
  for (const auto& e : node_entries) s += ", " + e;
  return "Current cluster resources: {" + s + "}";
}

}  // namespace roll::runtime
