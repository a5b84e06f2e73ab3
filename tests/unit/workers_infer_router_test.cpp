// The actor_infer role behind the router, through real processes: 2 infer ranks, a router service
// in this (driver) process, and 2 client processes x 2 threads sending 200 interleaved requests.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"
#include "roll/runtime/rpc_client.h"
#include "roll/runtime/rpc_server.h"
#include "roll/runtime/runtime.h"
#include "roll/workers/generate_protocol.h"
#include "roll/workers/request_router.h"
#include "roll/workers/router_service.h"
#include "roll/workers/trim_padding.h"
#include "unit/multiprocess.h"
#include "unit/worker_runtime.h"

namespace roll::workers {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using runtime::Payload;

constexpr int kClients = 2, kThreads = 2, kPerThread = 50;

json request(const std::string& rid, int i, bool long_running) {
  std::vector<int> ids;
  for (int t = 0; t < 6 + i % 7; ++t) ids.push_back(100 + (i * 31 + t * 7) % 900);
  json sp = {{"temperature", 1.0}, {"max_new_tokens", long_running ? 400 : 6}, {"seed", i}, {"stop_token_ids", json::array()}};
  return {{"rid", rid}, {"input_ids", ids}, {"sampling_params", sp}};
}

// One client process: kThreads threads, each submits kPerThread requests at once, aborts every
// tenth (those ask for 400 tokens, so they are still held or running), then checks every answer.
void client_process(const test::ChildContext& ctx) {
  const std::string endpoint = ctx.env.at("ROUTER_ENDPOINT");
  std::atomic<int> aborted{0}, finished{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      runtime::RpcClient router(endpoint, "router");
      std::vector<std::future<Payload>> answers;
      std::vector<std::string> rids;
      for (int i = 0; i < kPerThread; ++i) {
        std::string rid = "c" + std::to_string(ctx.rank) + "-t" + std::to_string(t) + "-" + std::to_string(i);
        rids.push_back(rid);
        answers.push_back(router.call("generate_request", Payload(request(rid, i, i % 10 == 0))));
      }
      for (int i = 0; i < kPerThread; i += 10) router.call("abort", Payload(json{{"rid", rids[i]}}));
      for (int i = 0; i < kPerThread; ++i) {
        json out = runtime::wait_result(answers[i], 60s, rids[i]).args;
        const std::string reason = out["finish_reasons"][0];
        if (out["rid"] != rids[i]) ++bad;
        if (i % 10 == 0) {
          if (reason == "abort") ++aborted;
          else ++bad;
        } else {
          const auto n = out["output_token_ids"][0].size();
          if ((reason == "length" && n == 6) || (reason == "stop" && n <= 6)) ++finished;
          else ++bad;
          if (out["output_logprobs"][0].size() != n) ++bad;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::ofstream(ctx.dir + "/client" + std::to_string(ctx.rank) + ".json")
      << json{{"aborted", aborted.load()}, {"finished", finished.load()}, {"bad", bad.load()}}.dump();
}

class RouterFixture {
 public:
  explicit RouterFixture(const std::string& dir) {
    model::ModelInitOptions mo;
    mo.preset = "tiny";
    mo.out_dir = dir + "/model";
    model::init_model_dir(mo);
    runtime::RuntimeOptions o = test::worker_runtime_options(dir);
    rt = std::make_unique<runtime::Runtime>(o);
    runtime::ClusterSpec spec;
    spec.placement.name = "actor_infer";
    for (int r = 0; r < 2; ++r) {
      config::WorkerPlacement w;
      w.name = "actor_infer-" + std::to_string(r) + "-G" + std::to_string(r);
      w.rank = r;
      w.devices = {r};
      w.local_devices = {r};
      spec.placement.workers.push_back(w);
    }
    spec.devices_per_node = 2;
    spec.role = "actor_infer";
    spec.options = {{"model_dir", mo.out_dir}, {"dtype", "fp32"}, {"max_model_len", 512}, {"warm_up", false}};
    infer = rt->start(std::move(spec));
    for (int r = 0; r < 2; ++r)
      ranks.push_back(std::make_shared<runtime::RpcClient>(infer->endpoint(r), infer->describe(r)));
    router = std::make_unique<RequestRouter>(ranks, RouterKind::prompt_affinity, 8);
    server = std::make_unique<runtime::RpcServer>("tcp://127.0.0.1:*");
    bind_router(*server, *router);
    serving = std::thread([this] { server->serve(); });
  }
  ~RouterFixture() {
    server->stop();
    serving.join();
  }

  std::unique_ptr<runtime::Runtime> rt;
  std::shared_ptr<runtime::Cluster> infer;
  std::vector<std::shared_ptr<runtime::RpcClient>> ranks;
  std::unique_ptr<RequestRouter> router;
  std::unique_ptr<runtime::RpcServer> server;
  std::thread serving;
};

int64_t requests_done(runtime::RpcClient& rank) {
  return rank.call_sync("stats", Payload(), 30s).args["requests_done"].get<int64_t>();
}

TEST(WorkersInferRouter, TwoHundredInterleavedRequestsWithAbortsAndSuspend) {
  if (auto ctx = test::child_context()) {
    client_process(*ctx);
    return;
  }
  const std::string dir = test::make_scratch_dir();
  RouterFixture f(dir);

  test::RunOptions o;
  o.dir = dir;
  o.timeout_s = 100;
  o.env["ROUTER_ENDPOINT"] = f.server->endpoint();
  auto results = test::run_ranks(kClients, o);
  test::expect_all_ok(results);
  int aborted = 0, finished = 0, bad = 0;
  for (int c = 0; c < kClients; ++c) {
    std::ifstream in(dir + "/client" + std::to_string(c) + ".json");
    ASSERT_TRUE(in.good()) << results[c].log;
    json j = json::parse(in);
    aborted += j["aborted"].get<int>();
    finished += j["finished"].get<int>();
    bad += j["bad"].get<int>();
  }
  EXPECT_EQ(aborted, 20);
  EXPECT_EQ(finished, 180);
  EXPECT_EQ(bad, 0);
  RouterStats s = f.router->stats();
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.held, 0);
  EXPECT_GT(s.requests[0], 0);  // both ranks served
  EXPECT_GT(s.requests[1], 0);
  EXPECT_EQ(s.requests[0] + s.requests[1] + s.held, s.requests[0] + s.requests[1]);

  // Router suspend: nothing reaches an infer rank until resume.
  const int64_t before = requests_done(*f.ranks[0]) + requests_done(*f.ranks[1]);
  f.router->suspend();
  std::promise<std::string> answer;  // the finish reason, or the error
  f.router->generate(workers::request_from_json(request("held-1", 3, false)), "held-1",
                     [&](const RequestOutput* out, const std::string& err) {
                       answer.set_value(out ? roll::to_string(out->samples.at(0).finish_reason) : err);
                     });
  auto fut = answer.get_future();
  EXPECT_EQ(fut.wait_for(300ms), std::future_status::timeout);
  EXPECT_EQ(f.router->stats().held, 1);
  EXPECT_EQ(requests_done(*f.ranks[0]) + requests_done(*f.ranks[1]), before);
  f.router->resume();
  ASSERT_EQ(fut.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(fut.get(), "length");

  // Worker suspend: the rank holds a request it received until resume.
  f.ranks[0]->call_sync("suspend", Payload(), 10s);
  auto held = f.ranks[0]->call("generate_request", Payload(request("held-2", 4, false)));
  EXPECT_EQ(held.wait_for(300ms), std::future_status::timeout);
  EXPECT_EQ(f.ranks[0]->call_sync("stats", Payload(), 10s).args["held"], 1);
  f.ranks[0]->call_sync("resume", Payload(), 10s);
  EXPECT_EQ(runtime::wait_result(held, 30s, "held-2").args["finish_reasons"][0], "length");
}

// The engine's sampled-token log-probs against the reference/actor forward (the reference role's
// path: used columns only, LM head chunks) on the same weights: ratio mean within 1e-3 of 1.
TEST(WorkersInferRouter, EngineLogProbsAgreeWithTheTrainingForward) {
  const std::string dir = test::make_scratch_dir();
  RouterFixture f(dir);
  auto model = model::Transformer::load(dir + "/model", at::kFloat);
  double ratio_sum = 0, worst = 0;
  int64_t n = 0;
  for (int i = 0; i < 6; ++i) {
    json req = request("lp-" + std::to_string(i), i, false);
    req["sampling_params"]["max_new_tokens"] = 24;
    req["sampling_params"]["temperature"] = 0.7 + 0.2 * i;  // any temperature: raw log-probs
    json out = f.ranks[i % 2]->call_sync("generate_request", Payload(req), 30s).args;
    std::vector<int64_t> ids = req["input_ids"].get<std::vector<int64_t>>();
    const int64_t plen = static_cast<int64_t>(ids.size());
    for (int64_t t : out["output_token_ids"][0].get<std::vector<int64_t>>()) ids.push_back(t);
    const auto lps = out["output_logprobs"][0].get<std::vector<float>>();
    at::Tensor x = at::tensor(ids, at::kLong).unsqueeze(0);
    at::Tensor mask = at::ones_like(x);
    at::Tensor pos = at::arange(x.size(1), at::kLong).unsqueeze(0);
    at::NoGradGuard g;
    auto train = workers::log_probs_on_used_columns(
        [&](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, const at::Tensor&) {
          return model->token_log_probs(a, b, c, false, false, workers::lm_head_chunk_tokens(model->config()));
        },
        x, mask, pos);
    for (size_t k = 0; k < lps.size(); ++k) {
      const double lt = train.log_probs[0][plen - 1 + static_cast<int64_t>(k)].item<double>();
      ratio_sum += std::exp(lt - lps[k]);
      worst = std::max(worst, std::abs(lt - lps[k]));
      ++n;
    }
  }
  ASSERT_GT(n, 100);
  // |mean(e^d) − 1| ≲ mean|d|: per-token fp32 differences of a few ulp of |log p| ≲ 16 (ulp ≤ 9.5e-7), so
  // 1e-5 leaves room and still sees a bias far below the worst-token bound.
  EXPECT_NEAR(ratio_sum / static_cast<double>(n), 1.0, 1e-5);
  // Engine vs training forward: ~16 fp32 reductions of ~64 terms in quadrature, √16·√64·eps ≈ 4e-6
  // relative, on |log p| ≲ 16.
  EXPECT_LT(worst, 1e-4);
}

TEST(WorkersInferRouter, BadRequestsFailAloneAndTheRankKeepsServing) {
  const std::string dir = test::make_scratch_dir();
  RouterFixture f(dir);
  auto& rank = *f.ranks[1];
  json empty = request("bad-empty", 1, false);
  empty["input_ids"] = json::array();
  json huge_id = request("bad-id", 1, false);
  huge_id["input_ids"] = {1, 2, 99999999};
  json n0 = request("bad-n", 1, false);
  n0["sampling_params"]["n"] = 0;
  for (const json& bad : {empty, huge_id, n0}) {
    try {
      rank.call_sync("generate_request", Payload(bad), 30s);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("generate_request"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(rank.call_sync("generate_request", Payload(request("good", 2, false)), 30s).args["finish_reasons"][0],
            "length");
}

}  // namespace
}  // namespace roll::workers
