#pragma once
// A RequestRouter published as a service (docs/design.md section 3), so env workers and other processes
// send generate requests through the one router that keeps the credits. It serves the generation
// methods of rpc_methods.h (all but actor_infer's sleep and wake); a generate_request's affinity
// key defaults to its rid.
namespace roll::runtime {
class RpcServer;
}

namespace roll::workers {

class RequestRouter;

void bind_router(runtime::RpcServer& server, RequestRouter& router);

}  // namespace roll::workers
