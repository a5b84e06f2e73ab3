#include "roll/workers/remote_episode_source.h"

#include "roll/core/error.h"
#include "roll/runtime/rpc_client.h"
#include "roll/workers/group_queue_service.h"
#include "roll/workers/rpc_methods.h"

namespace roll::workers {
namespace {

using namespace std::chrono_literals;
// put and env_exit are answered at once by a live driver; this only bounds a wait on a dead one.
constexpr auto kCallTimeout = std::chrono::milliseconds(120s);

}  // namespace

RemoteEpisodeSource::RemoteEpisodeSource(const std::string& queue_endpoint)
    : client_(std::make_unique<runtime::RpcClient>(queue_endpoint, "group queue service at " + queue_endpoint)) {}

RemoteEpisodeSource::~RemoteEpisodeSource() = default;

std::optional<agentic::GroupQueueManager::Episode> RemoteEpisodeSource::get_episode(int64_t group_id, int64_t env_id) {
  struct Answer {
    bool done = false;
    std::optional<agentic::GroupQueueManager::Episode> episode;
    std::string error;
  };
  auto answer = std::make_shared<Answer>();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (closed_) return std::nullopt;
  }
  // The callback runs on the client's thread, possibly after this wait was ended by close().
  client_->call_async(rpc::kGetEpisode, runtime::Payload(nlohmann::json{{"group_id", group_id}, {"env_id", env_id}}),
                      [this, answer](runtime::Payload* result, const std::string& error) {
                        std::lock_guard<std::mutex> g(mu_);
                        answer->done = true;
                        if (!result) {
                          answer->error = error;
                        } else if (!result->args.value("episode_id", nlohmann::json()).is_null()) {
                          answer->episode = agentic::GroupQueueManager::Episode{
                              result->args["episode_id"].get<int64_t>(), result->args.at("start_step").get<int64_t>(),
                              result->args.at("slot").get<int64_t>()};
                        }
                        cv_.notify_all();
                      });
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return answer->done || closed_; });
  if (!answer->done) return std::nullopt;  // closed
  if (!answer->error.empty()) throw Error(answer->error);
  return answer->episode;
}

void RemoteEpisodeSource::put(agentic::Rollout rollout) {
  client_->call_sync(rpc::kPutRollout, rollout_to_payload(rollout), kCallTimeout);
}

void RemoteEpisodeSource::env_exit(int64_t group_id, int64_t env_id) {
  client_->call_sync(rpc::kEnvExit, runtime::Payload(nlohmann::json{{"group_id", group_id}, {"env_id", env_id}}),
                     kCallTimeout);
}

void RemoteEpisodeSource::close() {
  std::lock_guard<std::mutex> g(mu_);
  closed_ = true;
  cv_.notify_all();
}

void RemoteEpisodeSource::disconnect(const std::string& reason) { client_->fail_all(reason); }

}  // namespace roll::workers
