#pragma once
// The GroupQueueManager as a service (docs/agentic.md; docs/design.md section 3): the driver hosts the queue and
// env workers ask it for episodes and hand their rollouts back (get_episode, put, env_exit:
// rpc_methods.h). get_episode is inline: its answer waits, without blocking the socket thread,
// until the group has an episode for the env; {episode_id: null} means the queue is finished or
// shut down.
#include "roll/agentic/group_queue.h"
#include "roll/runtime/rpc_message.h"

namespace roll::runtime {
class RpcServer;
}

namespace roll::workers {

void bind_group_queue(runtime::RpcServer& server, agentic::GroupQueueManager& queue);

// A rollout on the wire: its ids as JSON, its data as the Batch (absent when it has none).
runtime::Payload rollout_to_payload(const agentic::Rollout& rollout);
// Throws roll::Error naming the missing or mistyped field.
agentic::Rollout rollout_from_payload(runtime::Payload payload);

}  // namespace roll::workers
