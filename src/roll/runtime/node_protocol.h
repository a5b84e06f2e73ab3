#pragma once
// What the head and the node agents of a multi-node job say to each other through the head's
// rendezvous store (docs/design.md section 3). Everything is a key under "nodes/" or "run/":
//   nodes/<k>                   the node's NodeInfo (JSON), written when it joins
//   nodes/joined                how many nodes have joined (add)
//   nodes/<k>/heartbeat         a counter the node's agent bumps every second
//   nodes/<k>/spawn/<i>         the head asks node k to start worker i (SpawnRequest JSON)
//   nodes/<k>/spawned/<i>       the agent's answer: {"pid": N} or {"error": "..."}
//   nodes/<k>/kill/<i>          the head asks the agent to stop worker i (grace in ms)
//   nodes/<k>/exit/<i>          the agent reports worker i's exit: {"how", "last_lines"}
//   run/heartbeat               a counter the head bumps every second
//   run/status                  the head's end: {"ok": bool, "reason": "..."}
//   run/agents_done             agents that saw run/status (add); the head waits for them
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::runtime {

struct NodeInfo {
  int rank = 0;
  int world_size = 1;
  std::string address;    // where its workers bind
  std::string worker_id;  // WORKER_ID
  std::string hostname;   // for messages only
  int devices = 0;        // accelerators (or CPU device slots) it offers
  int cores = 0;
  std::string device_key = "CPU";  // ROLL's resource name: CPU | GPU | NPU
  nlohmann::json to_json() const;
  static NodeInfo from_json(const nlohmann::json& j);
  // JSON text from the store; throws roll::Error naming `source` (the store key) when malformed.
  static NodeInfo parse(const std::string& text, const std::string& source);
  // "node 1 (10.0.0.2, host n1)"
  std::string describe() const;
};

struct SpawnRequest {
  std::string name;                              // the worker's name
  std::map<std::string, std::string> settings;  // variables over the agent's environment
  nlohmann::json to_json() const;
  static SpawnRequest from_json(const nlohmann::json& j);
  static SpawnRequest parse(const std::string& text, const std::string& source);  // as NodeInfo::parse
};

namespace node_keys {
std::string info(int node);
inline constexpr const char* kJoined = "nodes/joined";
std::string heartbeat(int node);
std::string spawn(int node, int index);
std::string spawned(int node, int index);
std::string kill(int node, int index);
std::string exit(int node, int index);
inline constexpr const char* kHeadHeartbeat = "run/heartbeat";
inline constexpr const char* kStatus = "run/status";
inline constexpr const char* kAgentsDone = "run/agents_done";
}  // namespace node_keys

// The seed's join progress line: "1 nodes have joined so far, waiting for 1."
std::string join_progress_line(int joined, int world_size);
// The seed's resources line with our names: "Current cluster resources: {'CPU': 64, 'GPU': 16, ...}".
std::string cluster_resources_line(const std::vector<NodeInfo>& nodes);

}  // namespace roll::runtime
