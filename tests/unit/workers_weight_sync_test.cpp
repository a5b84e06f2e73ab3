// Train -> infer weight sync through real processes: a sender worker (standing in for train rank 0)
// broadcasts perturbed weights to 2 actor_infer ranks in small buckets, and writes them to the
// shared-memory file of the same-node path; the infer side's tensors must equal the sender's bit for
// bit, and its greedy generations those of an engine loaded from the sender's weights on disk.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "roll/comm/process_group.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/runtime/runtime.h"
#include "roll/workers/shared_weights.h"
#include "roll/workers/weight_sync.h"
#include "unit/multiprocess.h"
#include "unit/worker_runtime.h"

namespace roll::workers {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using runtime::Dispatch;
using runtime::Payload;

class WeightSenderRole : public runtime::Role {
 public:
  explicit WeightSenderRole(runtime::WorkerContext& ctx) : ctx_(ctx) {
    const bool bf16 = ctx.options.value("dtype", "fp32") == "bf16";
    auto m = model::Transformer::load(ctx.options.at("model_dir").get<std::string>(), bf16 ? at::kBFloat16 : at::kFloat);
    at::manual_seed(ctx.options.value("seed", 7));
    for (const auto& [name, t] : m->named_parameters())
      weights_.emplace_back(name, (t.to(at::kFloat) + 0.01 * at::randn(t.sizes())).to(t.scalar_type()));
  }
  void bind(runtime::RpcServer& s) override {
    s.on_call("setup_model_update", [this](Payload p) {
      comm::GroupOptions go;
      go.name = p.args.at("group").get<std::string>();
      go.timeout = 60s;
      group_ = comm::ProcessGroup::create(ctx_.store, 0, p.args.at("world_size").get<int>(), go);
      return Payload();
    });
    s.on_call("send_weights", [this](Payload p) {
      SyncStats st;
      broadcast_weights(*group_, 0, &weights_, p.args.at("bucket_bytes").get<int64_t>(), &st);
      return Payload(json{{"buckets", st.buckets}, {"bytes", st.bytes}});
    });
    s.on_call("write_shm", [this](Payload p) {
      const std::string file = p.args.at("file").get<std::string>();
      if (!shared_) shared_ = SharedWeights::create(file, weights_);
      model::NamedTensors w = weights_;
      if (p.args.contains("bump")) {  // other weights than weights_: the first tensor shifted
        w.front().second = w.front().second + p.args["bump"].get<double>();
      }
      shared_->write(w, p.args.at("version").get<int64_t>());
      return Payload(json{{"file", file}});
    });
    s.on_call("save_dir", [this](Payload p) {
      model::write_safetensors_dir(p.args.at("dir").get<std::string>(), weights_, uint64_t{1} << 30);
      return Payload();
    });
    s.on_call("weights_digest", [this](Payload) { return Payload(weights_digest(weights_)); });
  }

 private:
  runtime::WorkerContext& ctx_;
  model::NamedTensors weights_;
  std::shared_ptr<comm::ProcessGroup> group_;
  std::shared_ptr<SharedWeights> shared_;
};

const bool registered = [] {
  runtime::register_role("test_weight_sender",
                         [](runtime::WorkerContext& c) { return std::make_unique<WeightSenderRole>(c); });
  return true;
}();

runtime::ClusterSpec cluster(const std::string& name, int world, const std::string& role, json options) {
  runtime::ClusterSpec spec = test::cpu_cluster_spec(name, world, role);
  spec.options = std::move(options);
  return spec;
}

void check_sync(const std::string& dtype) {
  const std::string dir = test::make_scratch_dir();
  model::ModelInitOptions mo;
  mo.out_dir = dir + "/model";
  model::init_model_dir(mo);
  runtime::RuntimeOptions o;
  o.worker_command = {std::filesystem::read_symlink("/proc/self/exe").string(), "--roll-worker"};
  o.log_dir = dir + "/logs";
  o.run_dir = dir;
  o.rpc_timeout = 60s;
  o.forward_output = false;
  runtime::Runtime rt(o);
  json common = {{"model_dir", mo.out_dir}, {"dtype", dtype}, {"warm_up", false}, {"max_model_len", 256}};
  auto clusters = rt.start({cluster("actor_train", 1, "test_weight_sender", common),
                            cluster("actor_infer", 2, "actor_infer", common)});
  auto& sender = *clusters[0];
  auto& infer = *clusters[1];

  const json want = sender.call("weights_digest", Dispatch::one_to_all_one).get().args;
  const json before = infer.call("weights_digest", Dispatch::one_to_all_one).get().args;
  ASSERT_EQ(want.size(), before.size());
  EXPECT_NE(want, before);

  // Broadcast path: sender = group rank 0, infer rank r = group rank 1 + r; 64 KiB buckets.
  auto s = sender.call("setup_model_update", Dispatch::one_to_all, Payload(json{{"group", "mu"}, {"world_size", 3}}));
  std::vector<Payload> per_rank;
  for (int r = 0; r < 2; ++r) per_rank.emplace_back(json{{"group", "mu"}, {"rank", 1 + r}, {"world_size", 3}});
  auto i = infer.call_each("setup_model_update", std::move(per_rank));
  s.get_all();
  i.get_all();
  auto send = sender.call("send_weights", Dispatch::one_to_all_one, Payload(json{{"bucket_bytes", 64 << 10}}));
  auto recv = infer.call("receive_weights", Dispatch::one_to_all, Payload(json{{"group", "mu"}, {"bucket_bytes", 64 << 10}}));
  json sent = send.get().args;
  EXPECT_GT(sent["buckets"].get<int>(), 3);
  for (const auto& r : recv.get_all()) EXPECT_EQ(r.args["bytes"], sent["bytes"]);
  for (const auto& d : infer.call("weights_digest", Dispatch::one_to_all).get_all()) EXPECT_EQ(d.args, want);

  // The engine still generates after the update.
  json req = {{"rid", "after-sync"}, {"input_ids", {11, 12, 13, 14, 15, 16}},
              {"sampling_params", {{"temperature", 0.0}, {"max_new_tokens", 4}, {"stop_token_ids", json::array()}}}};
  EXPECT_EQ(infer.call_rank(1, "generate_request", Payload(req)).get().args["output_token_ids"][0].size(), 4u);

  // Shared-memory path: back to the original weights on rank 0 first, then the sender's file.
  infer.call_rank(0, "load_weights", Payload(json{{"dir", mo.out_dir}})).get();
  EXPECT_EQ(infer.call_rank(0, "weights_digest").get().args, before);
  const std::string shm = "/dev/shm/roll-test-" + std::to_string(getpid()) + "-" + dtype;
  const std::string file =
      sender.call("write_shm", Dispatch::one_to_all_one, Payload(json{{"file", shm + "/weights"}, {"version", 5}}))
          .get()
          .args["file"];
  // A version other than the one published is refused, and leaves the engine's weights alone.
  EXPECT_THROW(infer.call_rank(0, "load_shared_weights", Payload(json{{"file", file}, {"version", 6}})).get(),
               std::exception);
  EXPECT_EQ(infer.call_rank(0, "weights_digest").get().args, before);
  json loaded = infer.call_rank(0, "load_shared_weights", Payload(json{{"file", file}, {"version", 5}})).get().args;
  EXPECT_GT(loaded["bytes"].get<int64_t>(), 0);
  EXPECT_EQ(infer.call_rank(0, "weights_digest").get().args, want);

  // Greedy generations after the sync equal those of an engine loaded from the same weights on disk.
  const std::string saved = dir + "/saved";
  sender.call("save_dir", Dispatch::one_to_all_one, Payload(json{{"dir", saved}})).get();
  infer.call_rank(1, "load_weights", Payload(json{{"dir", saved}})).get();
  EXPECT_EQ(infer.call_rank(1, "weights_digest").get().args, want);
  json greedy = {{"rid", "greedy"}, {"input_ids", {21, 22, 23, 24, 25, 26, 27, 28}},
                 {"sampling_params", {{"temperature", 0.0}, {"max_new_tokens", 16}, {"stop_token_ids", json::array()}}}};
  const json synced = infer.call_rank(0, "generate_request", Payload(greedy)).get().args;
  greedy["rid"] = "greedy-disk";
  const json from_disk = infer.call_rank(1, "generate_request", Payload(greedy)).get().args;
  EXPECT_EQ(synced["output_token_ids"], from_disk["output_token_ids"]);
  EXPECT_EQ(synced["output_token_ids"][0].size(), 16u);
  // Each token carries the version of the weights that sampled it.
  EXPECT_EQ(synced["output_weight_versions"][0], json(std::vector<int64_t>(16, 5)));

  // Colocated (share): the engine computes from the mapping itself, so what the sender writes
  // next is what it computes with, without another copy; loading it again is just the version.
  infer.call_rank(0, "load_shared_weights", Payload(json{{"file", file}, {"version", 5}, {"share", true}})).get();
  EXPECT_EQ(infer.call_rank(0, "weights_digest").get().args, want);
  sender.call("write_shm", Dispatch::one_to_all_one, Payload(json{{"file", file}, {"version", 6}, {"bump", 1.0}}))
      .get();
  const json bumped = infer.call_rank(0, "weights_digest").get().args;
  EXPECT_NE(bumped, want);
  int changed = 0;  // only the tensor the sender shifted
  for (const auto& [name, digest] : want.items()) changed += bumped[name] != digest;
  EXPECT_EQ(changed, 1);
  infer.call_rank(0, "load_shared_weights", Payload(json{{"file", file}, {"version", 6}, {"share", true}})).get();
  greedy["rid"] = "greedy-shared";
  EXPECT_EQ(infer.call_rank(0, "generate_request", Payload(greedy)).get().args["output_weight_versions"][0],
            json(std::vector<int64_t>(16, 6)));
  // Loading other weights after sharing gives the engine its own copies first (the mapping is
  // read-only there): the file keeps the bumped weights, the engine gets the saved ones.
  infer.call_rank(0, "load_weights", Payload(json{{"dir", saved}})).get();
  EXPECT_EQ(infer.call_rank(0, "weights_digest").get().args, want);
  std::filesystem::remove_all(shm);
}

TEST(WorkersWeightSync, BroadcastAndSharedMemoryAreBitExactFp32) { check_sync("fp32"); }
TEST(WorkersWeightSync, BroadcastAndSharedMemoryAreBitExactBf16) { check_sync("bf16"); }

}  // namespace
}  // namespace roll::workers
