#pragma once
// agentic::LlmClient over the driver's router service (router_service.h): every request carries
// its env id (src_rank) as the affinity key, so the env-affinity router keeps an env on one infer
// rank. One client per env worker, shared by its env threads.
#include <memory>
#include <string>

#include "roll/agentic/llm_client.h"

namespace roll::runtime {
class RpcClient;
}

namespace roll::workers {

class RemoteLlmClient : public agentic::LlmClient {
 public:
  explicit RemoteLlmClient(const std::string& router_endpoint);
  ~RemoteLlmClient() override;

  // The future fails with a roll::Error naming the router and the request when the call fails.
  std::future<agentic::GenerateResult> generate(agentic::GenerateRequest request) override;
  // The request's own answer then comes back with finish reason "abort".
  void abort(const std::string& rid) override;

  // Fails every request in flight and later (the router is gone: nobody will answer).
  void disconnect(const std::string& reason);

 private:
  std::unique_ptr<runtime::RpcClient> client_;
};

}  // namespace roll::workers
