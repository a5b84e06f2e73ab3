#include "roll/workers/group_queue_service.h"

#include "roll/core/error.h"
#include "roll/runtime/rpc_server.h"
#include "roll/workers/rpc_methods.h"

namespace roll::workers {
namespace {

int64_t int_arg(const nlohmann::json& args, const char* method, const char* key) {
  if (!args.contains(key) || !args[key].is_number_integer())
    throw Error(std::string(method) + ": '" + key + "' (an integer) is required, got " +
                (args.contains(key) ? args[key].dump() : std::string("nothing")));
  return args[key].get<int64_t>();
}

}  // namespace

runtime::Payload rollout_to_payload(const agentic::Rollout& r) {
  nlohmann::json ids = {
      {"group_id", r.group_id}, {"episode_id", r.episode_id}, {"env_id", r.env_id}, {"start_step", r.start_step},
      {"slot", r.slot}};
  if (r.data) return runtime::Payload(std::move(ids), *r.data);
  return runtime::Payload(std::move(ids));
}

agentic::Rollout rollout_from_payload(runtime::Payload p) {
  agentic::Rollout r;
  r.group_id = int_arg(p.args, rpc::kPutRollout, "group_id");
  r.episode_id = int_arg(p.args, rpc::kPutRollout, "episode_id");
  r.env_id = int_arg(p.args, rpc::kPutRollout, "env_id");
  r.start_step = int_arg(p.args, rpc::kPutRollout, "start_step");
  r.slot = int_arg(p.args, rpc::kPutRollout, "slot");
  if (p.batch) r.data = std::make_shared<const Batch>(std::move(*p.batch));
  return r;
}

void bind_group_queue(runtime::RpcServer& server, agentic::GroupQueueManager& queue) {
  using runtime::Payload;
  using runtime::Responder;
  server.on(
      rpc::kGetEpisode,
      [&queue](Payload p, Responder& reply) {
        const int64_t group_id = int_arg(p.args, rpc::kGetEpisode, "group_id");
        const int64_t env_id = int_arg(p.args, rpc::kGetEpisode, "env_id");
        auto shared = std::make_shared<Responder>(std::move(reply));
        try {
          queue.get_episode_async(group_id, env_id, [shared](std::optional<agentic::GroupQueueManager::Episode> ep) {
            if (ep)
              shared->ok(Payload(nlohmann::json{
                  {"episode_id", ep->episode_id}, {"start_step", ep->start_step}, {"slot", ep->slot}}));
            else shared->ok(Payload(nlohmann::json{{"episode_id", nullptr}}));
          });
        } catch (const std::exception& e) {
          // A bad group id: refused before the callback was kept.
          if (!shared->answered()) shared->fail(e.what());
        }
      },
      runtime::RunMode::inline_);
  server.on_call(rpc::kPutRollout, [&queue](Payload p) {
    queue.put(rollout_from_payload(std::move(p)));
    return Payload();
  });
  server.on_call(rpc::kEnvExit, [&queue](Payload p) {
    queue.env_exit(int_arg(p.args, rpc::kEnvExit, "group_id"), int_arg(p.args, rpc::kEnvExit, "env_id"));
    return Payload();
  });
}

}  // namespace roll::workers
