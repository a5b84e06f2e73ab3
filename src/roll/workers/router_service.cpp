#include "roll/workers/router_service.h"

#include "roll/runtime/rpc_server.h"
#include "roll/workers/generate_protocol.h"
#include "roll/workers/request_router.h"
#include "roll/workers/rpc_methods.h"

namespace roll::workers {

void bind_router(runtime::RpcServer& server, RequestRouter& router) {
  using runtime::Payload;
  using runtime::Responder;
  using runtime::RunMode;
  server.on(
      rpc::kGenerateRequest,
      [&router](Payload p, Responder& reply) {
        RoutedRequest r = routed_request_from_json(p.args);
        auto shared = std::make_shared<Responder>(std::move(reply));
        router.generate(std::move(r.request), r.affinity_key, [shared](const RequestOutput* out, const std::string& error) {
          if (out) shared->ok(Payload(output_to_json(*out)));
          else shared->fail(error);
        });
      },
      RunMode::inline_);
  server.on(
      rpc::kAbort,
      [&router](Payload p, Responder& reply) { router.abort(abort_from_json(p.args)), reply.ok(); },
      RunMode::inline_);
  server.on(rpc::kAbortAll, [&router](Payload, Responder& reply) { router.abort_all(), reply.ok(); }, RunMode::inline_);
  server.on(rpc::kSuspend, [&router](Payload, Responder& reply) { router.suspend(), reply.ok(); }, RunMode::inline_);
  server.on(rpc::kResume, [&router](Payload, Responder& reply) { router.resume(), reply.ok(); }, RunMode::inline_);
  server.on(
      rpc::kStats,
      [&router](Payload, Responder& reply) {
        RouterStats s = router.stats();
        reply.ok(Payload(nlohmann::json{{"load", s.load},
                                        {"requests", s.requests},
                                        {"held", s.held},
                                        {"in_flight", s.in_flight},
                                        {"suspended", s.suspended}}));
      },
      RunMode::inline_);
  server.on_call(rpc::kWaitComplete, [&router](Payload) { return router.wait_complete(), Payload(); });
}

}  // namespace roll::workers
