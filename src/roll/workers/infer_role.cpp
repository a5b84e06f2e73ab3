// The actor_infer role (ROLL's InferWorker with a vllm/sglang strategy): our engine behind the
// generate_request service (docs/design.md section 3). The methods and their payloads are in
// rpc_methods.h: generate_request, abort, suspend and resume run inline on the socket thread, the
// rest (engine control, weight sync) serially.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "roll/comm/process_group.h"

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/engine/engine_config.h"
#include "roll/model/safetensors.h"
#include "roll/model/transformer.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/workers/adapter_sync.h"
#include "roll/workers/engine_from_config.h"
#include "roll/workers/generate_protocol.h"
#include "roll/workers/infer_service.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/role_model.h"
#include "roll/workers/rpc_methods.h"
#include "roll/workers/shared_weights.h"
#include "roll/workers/weight_sync.h"

namespace roll::workers {
namespace {

class InferRole : public runtime::Role {
 public:
  explicit InferRole(runtime::WorkerContext& ctx) : ctx_(ctx) {
    const std::string dir = model_dir_of(ctx);
    std::string dtype = ctx.options.value("dtype", "");
    if (dtype.empty()) dtype = ctx.config ? worker_config_of(ctx.config->config, ctx.cluster).model_args.dtype : "bf16";
    auto model = model::Transformer::load(dir, engine_dtype_named(dtype));
    // With model_args.lora_target the trainer sends adapters only (adapter_sync.h), and the
    // modules it trains whole: actor_train's additional_target.
    if (ctx.config)
      if (auto lora = role_lora(worker_config_of(ctx.config->config, ctx.cluster), ctx.cluster)) {
        if (auto trained = role_lora(ctx.config->config.actor_train, "actor_train"))
          lora->modules_to_save = trained->modules_to_save;
        lora_ = std::make_unique<AdapterSync>(std::move(*lora), *model);
      }
    service_ = std::make_unique<InferService>(std::move(model), engine_config_of(ctx));
    log::info("{}: engine ready on {} ({}), max_model_len {}", ctx.worker_name, dir, dtype, service_->max_model_len());
  }

  void bind(runtime::RpcServer& s) override {
    using runtime::Payload;
    using runtime::Responder;
    s.on(
        rpc::kGenerateRequest,
        [this](Payload p, Responder& reply) {
          GenerationRequest r = request_from_json(p.args);
          auto shared = std::make_shared<Responder>(std::move(reply));
          service_->submit(std::move(r), [shared](InferService::Result res) {
            if (auto* out = std::get_if<RequestOutput>(&res))
              shared->ok(Payload(output_to_json(*out)));
            else
              shared->fail(std::get<std::string>(res));
          });
        },
        runtime::RunMode::inline_);
    s.on(
        rpc::kAbort,
        [this](Payload p, Responder& reply) {
          service_->abort(abort_from_json(p.args));
          reply.ok();
        },
        runtime::RunMode::inline_);
    s.on(rpc::kSuspend, [this](Payload, Responder& reply) { service_->suspend(), reply.ok(); }, runtime::RunMode::inline_);
    s.on(rpc::kResume, [this](Payload, Responder& reply) { service_->resume(), reply.ok(); }, runtime::RunMode::inline_);
    s.on_call(rpc::kAbortAll, [this](Payload) { return service_->abort_all(), Payload(); });
    s.on_call(rpc::kSleep, [this](Payload) { return service_->sleep(), Payload(); });
    s.on_call(rpc::kWake, [this](Payload) { return service_->wake(), Payload(); });
    s.on_call(rpc::kStats, [this](Payload) {
      InferStats st = service_->stats();
      return Payload(nlohmann::json{{"requests_done", st.requests_done},
                                    {"requests_aborted", st.requests_aborted},
                                    {"tokens_generated", st.tokens_generated},
                                    {"running", st.running},
                                    {"held", st.held},
                                    {"suspended", st.suspended},
                                    {"sleeping", st.sleeping}});
    });
    // Weight sync (weight_sync.h). setup_model_update joins the process group the sender
    // creates with it; receive_weights takes one broadcast; load_shared_weights the shm path.
    s.on_call(rpc::kSetupModelUpdate, [this](Payload p) {
      groups_[p.args.at("group").get<std::string>()] =
          join_model_update_group(ctx_.store, p.args, p.args.at("rank").get<int>());
      return Payload();
    });
    s.on_call(rpc::kReceiveWeights, [this](Payload p) {
      const std::string name = p.args.at("group").get<std::string>();
      auto it = groups_.find(name);
      if (it == groups_.end()) throw Error("receive_weights: no model update group '" + name + "' (setup_model_update first)");
      SyncStats st;
      if (lora_) {
        // Adapters arrive; the engine's targeted weights become base + scale * B A.
        model::NamedTensors adapters;
        receive_weights_into(
            *it->second, 0,
            [&](const std::string& tensor, at::ScalarType dtype, const std::vector<int64_t>& shape) {
              adapters.emplace_back(tensor, at::empty(shape, at::TensorOptions().dtype(dtype)));
              return adapters.back().second;
            },
            p.args.at("bucket_bytes").get<int64_t>(), &st);
        service_->update_weights_in_place([&](const model::NamedTensors& own) { lora_->write_into(adapters, own); });
        service_->set_weight_version(p.args.value("version", int64_t{0}));
        return Payload(nlohmann::json{
            {"tensors", st.tensors}, {"bytes", st.bytes}, {"buckets", st.buckets}, {"receive_s", st.seconds}});
      }
      // Straight into the engine's own tensors, each chunk unpacked while the next arrives.
      service_->update_weights_in_place([&](const model::NamedTensors& own) {
        std::map<std::string, at::Tensor> by_name(own.begin(), own.end());
        receive_weights_into(
            *it->second, 0,
            [&](const std::string& tensor, at::ScalarType, const std::vector<int64_t>&) {
              auto found = by_name.find(tensor);
              if (found == by_name.end())
                throw Error(fmt::format("receive_weights: the engine has no tensor '{}'", tensor));
              return found->second;
            },
            p.args.at("bucket_bytes").get<int64_t>(), &st);
      });
      service_->set_weight_version(p.args.value("version", int64_t{0}));
      return Payload(nlohmann::json{
          {"tensors", st.tensors}, {"bytes", st.bytes}, {"buckets", st.buckets}, {"receive_s", st.seconds}});
    });
    s.on_call(rpc::kLoadSharedWeights, [this](Payload p) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::string file = p.args.at("file").get<std::string>();
      const int64_t version = p.args.at("version").get<int64_t>();
      if (!shared_ || shared_->path() != file || !shared_->is_current()) shared_ = SharedWeights::open(file);
      // The sender finished writing before the driver called us; a version other than the one
      // announced means another writer, and weights copied under it could be torn.
      auto check = [&](const char* when) {
        if (shared_->version() != version)
          throw Error(fmt::format("{}: {} holds weight version {} {} the copy, expected {}", rpc::kLoadSharedWeights,
                                  file, shared_->version(), when, version));
      };
      check("before");
      // Colocated with the trainer (it writes only while this engine is idle): compute from the
      // mapping itself. Otherwise copy out, so that the file may be rewritten while we generate.
      if (lora_)
        service_->update_weights_in_place([&](const model::NamedTensors& own) { lora_->write_into(shared_->views(), own); });
      else if (p.args.value("share", false)) service_->share_weights(shared_->views());
      else service_->update_weights(shared_->views());
      check("after");
      service_->set_weight_version(version);
      return Payload(nlohmann::json{{"bytes", shared_->data_bytes()},
                                    {"apply_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}});
    });
    s.on_call(rpc::kWeightsDigest, [this](Payload) { return Payload(weights_digest(service_->weights_snapshot())); });
    s.on_call(rpc::kLoadWeights, [this](Payload p) {
      const std::string dir = p.args.at("dir").get<std::string>();
      auto files = model::SafetensorsDir::open(dir);
      model::NamedTensors weights;
      for (const auto& name : files.names()) weights.emplace_back(name, files.get(name));
      service_->update_weights(weights);
      return Payload();
    });
  }

 private:
  runtime::WorkerContext& ctx_;
  std::unique_ptr<InferService> service_;
  std::unique_ptr<AdapterSync> lora_;  // null without LoRA
  std::map<std::string, std::shared_ptr<comm::ProcessGroup>> groups_;
  std::shared_ptr<SharedWeights> shared_;  // the sender's shared-memory file, mapped once
};

}  // namespace

void register_infer_role() {
  runtime::register_role("actor_infer", [](runtime::WorkerContext& c) { return std::make_unique<InferRole>(c); });
}

}  // namespace roll::workers
