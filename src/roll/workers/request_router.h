#pragma once
// ROLL's RouterManager (docs/pipelines.md): spreads generate requests over the infer ranks.
//   prompt_affinity (RLVR): every request of one prompt (affinity key) goes to the same rank;
//     a new key takes the least-loaded rank whose load is under max_running_requests; load is
//     the credit of the requests in flight (n samples each). With every rank full, requests wait.
//   env_affinity (agentic): a key (env) sticks to one rank, the one with the fewest keys.
// suspend() holds every new request until resume(); abort(rid) answers a held request at once
// and asks the rank to stop a running one, whose own answer then carries finish reason "abort".
// Thread-safe; answers arrive on RPC client threads.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "roll/core/generation.h"

namespace roll::runtime {
class RpcClient;
}

namespace roll::workers {

enum class RouterKind { prompt_affinity, env_affinity };

struct RouterStats {
  std::vector<int64_t> load;       // credit in flight per rank
  std::vector<int64_t> requests;   // requests sent per rank, so far
  int64_t held = 0;                // waiting (suspended or every rank full)
  int64_t in_flight = 0;
  bool suspended = false;
};

class RequestRouter {
 public:
  // output: the infer worker's answer, or null with `error` set.
  using Done = std::function<void(const RequestOutput* output, const std::string& error)>;

  RequestRouter(std::vector<std::shared_ptr<runtime::RpcClient>> ranks, RouterKind kind,
                int64_t max_running_requests = 128);
  ~RequestRouter();

  // The request id must be unique among those in flight.
  void generate(GenerationRequest request, const std::string& affinity_key, Done done);
  void abort(const std::string& rid);
  void abort_all();
  void suspend();
  void resume();
  // Blocks until nothing is held or in flight.
  void wait_complete();
  RouterStats stats() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace roll::workers
