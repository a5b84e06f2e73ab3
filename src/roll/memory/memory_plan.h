#pragma once
// The memory plan `roll validate` prints (docs/memory.md): for every worker of the placement plan,
// per phase of a step (generate, log_probs, train), what it holds on its device and in host memory;
// per device the sum over the workers placed there, the capacity and a verdict. Nothing is started:
// the figures come from the config, the models' shapes and the formulas of worker_memory.h.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/placement.h"
#include "roll/config/schema.h"
#include "roll/memory/device_capacity.h"
#include "roll/memory/worker_memory.h"

namespace roll::memory {

// `load`: a CPU worker reading its model (the files stay mapped until the weights are copied out);
// on accelerators the files are read into host memory, so the phase holds nothing on the device.
inline constexpr const char* kPhases[] = {"load", "generate", "log_probs", "train"};

// A worker process's own memory before any model: the runtime, libtorch and its thread pools on
// CPU (measured, docs/memory.md); the framework's context and allocator reserve on an accelerator.
int64_t process_base_bytes(config::Platform platform);

struct WorkerMemory {
  std::string cluster, worker;
  int node = 0;
  std::vector<int> devices;   // global device ids; empty: a CPU-only worker (host memory)
  std::vector<Part> resident;  // in every phase: the process itself
  std::vector<Part> states;    // the model's states: weights, optimizer, gradients, KV cache
  std::map<std::string, std::vector<Part>> transient;  // by phase: the activations of that phase's work
  std::vector<Part> host;      // offloaded to host memory (accelerators)
  // Accelerators, as ROLL's workers do: states are loaded for the worker's calls and offloaded to
  // host memory after them (the engine sleeps only when it shares devices). `active` lists the
  // phases with calls; the states count in the others only when `offloads` is false.
  bool offloads = false;
  std::vector<std::string> active;
  std::vector<std::string> notes;

  // resident + states + that phase's transient; at `load` only the weights of the states exist yet.
  int64_t phase_bytes(const std::string& phase) const;
  int64_t peak_bytes() const;                           // the largest phase
  std::string peak_phase() const;
};

struct DeviceMemory {
  int node = 0;
  int device = -1;  // global id; -1 on CPU, where the unit is the node's RAM
  std::vector<size_t> workers;  // indices into MemoryPlan::workers
  std::map<std::string, int64_t> phase_bytes;
  int64_t peak_bytes = 0;
  std::string peak_phase;
  bool fits(int64_t capacity) const { return capacity <= 0 || peak_bytes <= capacity; }
};

struct MemoryPlan {
  config::Platform platform = config::Platform::cpu;
  DeviceCapacity capacity;
  std::vector<WorkerMemory> workers;
  std::vector<DeviceMemory> devices;  // accelerators: each device; CPU: each node's RAM
  std::map<int, int64_t> host_bytes;  // accelerators: per node, what workers keep in host memory
  std::vector<std::string> unknown;   // models whose size the plan cannot know, named by key

  bool complete() const { return unknown.empty(); }
  // Every device within its capacity (false also when the capacity or a model is unknown).
  bool fits() const;
  const WorkerMemory* find(const std::string& worker) const;
};

struct PlanRequest {
  CapacityRequest capacity;  // platform, --device, --device-memory-gb; the rest is filled from the config
};

MemoryPlan plan_memory(const config::PipelineConfig& config, const config::PlacementPlan& placement,
                       const PlanRequest& request);

}  // namespace roll::memory
