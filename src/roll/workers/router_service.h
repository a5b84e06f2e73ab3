#pragma once
// A RequestRouter published as a service (DESIGN section 3), so env workers and other processes
// send generate requests through the one router that keeps the credits:
//   generate_request {rid, affinity_key?, input_ids, sampling_params} -> the infer answer
//   abort {rid}, abort_all, suspend, resume, stats; wait_complete (serial)
// The affinity key defaults to the rid.
namespace roll::runtime {
class RpcServer;
}

namespace roll::workers {

class RequestRouter;

void bind_router(runtime::RpcServer& server, RequestRouter& router);

}  // namespace roll::workers
