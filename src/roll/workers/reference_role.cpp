// The reference role (docs/runtime.md): a ReferenceModel's log-probs behind the RPC server.
// The methods it binds, and their payloads, are in rpc_methods.h.
#include "roll/workers/reference_model.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/trainer_binding.h"

namespace roll::workers {
namespace {

using runtime::Payload;

class ReferenceRole : public runtime::Role {
 public:
  explicit ReferenceRole(runtime::WorkerContext& ctx)
      : reference_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx)) {}

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kComputeLogProbs,
              [this](Payload p) { return Payload(reference_.compute_log_probs(need_batch(p, rpc::kComputeLogProbs))); });
  }

 private:
  ReferenceModel reference_;
};

}  // namespace

void register_reference_role() {
  runtime::register_role("reference", [](runtime::WorkerContext& c) { return std::make_unique<ReferenceRole>(c); });
}

}  // namespace roll::workers
