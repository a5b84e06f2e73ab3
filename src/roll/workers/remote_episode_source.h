#pragma once
// agentic::EpisodeSource over the driver's GroupQueueManager service (group_queue_service.h), for
// the env managers of an env worker (one source shared by its env threads).
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "roll/agentic/llm_client.h"

namespace roll::runtime {
class RpcClient;
}

namespace roll::workers {

class RemoteEpisodeSource : public agentic::EpisodeSource {
 public:
  explicit RemoteEpisodeSource(const std::string& queue_endpoint);
  ~RemoteEpisodeSource() override;

  // Waits for the service's answer (there may be none until the driver's next step), or close().
  std::optional<agentic::GroupQueueManager::Episode> get_episode(int64_t group_id, int64_t env_id) override;
  // Wait for the service to take the call; errors (the driver gone) are roll::Errors.
  void put(agentic::Rollout rollout) override;
  void env_exit(int64_t group_id, int64_t env_id) override;

  // Ends every get_episode wait, now and later, with nullopt (the worker stops its rollout).
  void close();
  // Fails every call in flight and later (the service is gone: nobody will answer).
  void disconnect(const std::string& reason);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  // Last: destroyed first, so no answer callback runs after mu_ and cv_ are gone.
  std::unique_ptr<runtime::RpcClient> client_;
};

}  // namespace roll::workers
