// Train -> infer weight sync time (docs/design.md section 7, docs/runtime.md "Weight sync"), as JSON
// lines. Two processes: rank 0 stands in for train rank 0 (a model's weights), rank 1 for an
// infer worker (an EngineCore); a sync is timed from the sender's start to the engine holding the
// new weights and its prefix cache reset, ready to generate (it then generates one token, untimed).
//   shm        rank 0 rewrites the shared weights file in place (workers/shared_weights.h), rank 1
//              copies it into the engine's weights: the one-node path.
//   shm-share  the same, the engine computing from the mapping itself (an infer worker colocated
//              with the trainer): rank 0's write and the version check are the whole sync.
//   broadcast  the pipelined, bucketed Gloo broadcast received straight into the engine's weights
//              (workers/weight_sync.h): the path across nodes.
//   memcpy     the same bytes copied once in one process with the same threads: the bound the
//              figures are read against (`of_memcpy` = memcpy seconds / sync seconds).
//   With --lora R (and --lora-target, default q_proj,k_proj,v_proj,o_proj) the sender holds rank-R
//   LoRA adapters and sends only those; the engine side writes base + (alpha / r) B A into its
//   weights (workers/adapter_sync.h), as a LoRA infer worker does. Paths shm and broadcast.
// Per preset, dtype and path: bytes, median seconds of --repeats (after one untimed first sync,
// which creates and populates the file), min, max, GB/s. Both ranks run with
// OMP_WAIT_POLICY=PASSIVE, as the runtime starts workers, unless the variable is set.
//
//   bench_weight_sync [--presets small,qwen2.5-0.5b-shape] [--dtypes fp32,bf16] [--paths shm,shm-share,broadcast]
//                     [--bucket-mb 1024] [--repeats 5] [--threads 2] [--smoke] [--lora R [--lora-target T]]
//                     [--rank 0|1 --master HOST:PORT]
// Without --rank, rank 1 is this binary again on 127.0.0.1. With --rank each side is started by
// hand (two hosts, or two network namespaces: bench/weight_sync_netns.sh); shm needs one host.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "roll/comm/process_group.h"
#include "roll/comm/store.h"
#include "roll/core/cpu_features.h"
#include "roll/core/parallel_copy.h"
#include "roll/core/parallel_for.h"
#include "roll/engine/engine_core.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"
#include "roll/workers/adapter_sync.h"
#include "roll/workers/shared_weights.h"
#include "roll/workers/weight_sync.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using roll::model::NamedTensors;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

struct Options {
  std::vector<std::string> presets{"small", "qwen2.5-0.5b-shape"};
  std::vector<std::string> dtypes{"fp32", "bf16"};
  std::vector<std::string> paths{"shm", "shm-share", "broadcast"};
  int64_t bucket_mb = 1024;
  int repeats = 5;
  int threads = 2;
  int rank = -1;  // -1: both, rank 1 spawned here
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int64_t lora_rank = 0;  // > 0: sync LoRA adapters of this rank
  std::string lora_target = "q_proj,k_proj,v_proj,o_proj";
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Summary {
  double median, min, max;
};
Summary summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

int64_t bytes_of(const NamedTensors& w) {
  int64_t b = 0;
  for (const auto& [n, t] : w) b += t.numel() * static_cast<int64_t>(t.element_size());
  return b;
}

// The bound: `bytes` copied once, in pieces spread over ATen's threads as the sync paths do
// (core/parallel_copy.h).
std::vector<double> time_memcpy(int64_t bytes, int repeats) {
  at::Tensor a = at::ones({bytes}, at::kByte), b = at::zeros({bytes}, at::kByte);
  std::vector<roll::core::CopyPiece> pieces;
  roll::core::add_copy(pieces, b.data_ptr(), a.data_ptr(), bytes);
  std::vector<double> out;
  for (int r = -1; r < repeats; ++r) {  // r == -1: untimed, so that every page of both exists
    const auto t0 = Clock::now();
    roll::core::copy_in_parallel(pieces);
    if (r >= 0) out.push_back(seconds_since(t0));
  }
  return out;
}

std::shared_ptr<roll::model::Transformer> model_of(const std::string& preset, at::ScalarType dtype, uint64_t seed) {
  return roll::model::Transformer::random(roll::model::preset_config(preset, "qwen2"), dtype, seed);
}

roll::engine::EngineConfig small_engine() {
  roll::engine::EngineConfig c;
  c.block_size = 16;
  c.num_blocks = 8;
  c.max_model_len = 64;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 256;
  return c;
}

// The sender's weights for sync number `v`: each sync changes every tensor, so a stale engine
// would be visible to the check at the end.
void perturb(NamedTensors& w, int64_t v) {
  at::NoGradGuard g;
  for (auto& [n, t] : w) t.view({-1}).narrow(0, 0, 1).fill_(static_cast<double>(v));
}

void print(const std::string& path, const std::string& preset, const std::string& dt, const Options& o,
           int64_t bytes, const std::vector<double>& secs, double memcpy_s, const std::string& extra = "") {
  const Summary s = summarise(secs);
  std::cout << fmt::format(
                   R"({{"bench":"weight_sync","path":"{}","preset":"{}","dtype":"{}","threads":{},"bucket_mb":{},"bytes":{},"seconds":{:.4f},"seconds_min":{:.4f},"seconds_max":{:.4f},"gb_per_s":{:.3f},"of_memcpy":{:.3f},"repeats":{},"cpu":"{}","flags":"{}"{}}})",
                   path, preset, dt, o.threads, o.bucket_mb, bytes, s.median, s.min, s.max, bytes / s.median / 1e9,
                   memcpy_s > 0 ? memcpy_s / s.median : 0.0, secs.size(), roll::core::cpu_features().model,
                   roll::core::cpu_features().flags(), extra)
            << std::endl;
}

// Both ranks run this with the same options; rank 0 prints.
int run(int rank, const Options& o, std::shared_ptr<roll::comm::Store> store = nullptr) {
  at::set_num_threads(o.threads);
  if (!store) store = roll::comm::Store::tcp({o.host, o.port, rank == 0, std::chrono::seconds(120)});
  roll::comm::GroupOptions go;
  go.name = "model_update";
  auto group = roll::comm::ProcessGroup::create(store, rank, 2, go);
  const std::string shm_file = fmt::format("/dev/shm/roll-bench-{}/weights", o.port);
  int failures = 0;
  for (const auto& preset : o.presets)
    for (const auto& dt : o.dtypes) {
      const auto dtype = dt == "bf16" ? at::kBFloat16 : at::kFloat;
      // Rank 0: the trainer's weights. Rank 1: an engine over another random model of the shape.
      NamedTensors w;
      std::shared_ptr<roll::model::Transformer> model = model_of(preset, dtype, rank == 0 ? 1 : 2);
      std::unique_ptr<roll::engine::EngineCore> engine;
      std::unique_ptr<roll::workers::AdapterSync> adapters;
      if (o.lora_rank > 0) {
        auto lora = roll::model::lora_config_from_args(o.lora_target, o.lora_rank, std::nullopt, 0, "--lora");
        if (rank == 0) model->add_lora(lora, 3);
        else adapters = std::make_unique<roll::workers::AdapterSync>(lora, *model);
      }
      if (rank == 0) w = model->trainable_parameters();
      else engine = std::make_unique<roll::engine::EngineCore>(model, small_engine());
      const int64_t bytes = bytes_of(rank == 0 ? w : model->named_parameters());
      double memcpy_s = 0;
      if (rank == 0) {
        const auto m = time_memcpy(bytes, o.repeats);
        memcpy_s = summarise(m).median;
        print("memcpy", preset, dt, o, bytes, m, memcpy_s);
      }
      int64_t version = 0;
      for (const auto& path : o.paths) {
        if (o.lora_rank > 0 && path == "shm-share") continue;  // adapters are merged into the engine's own weights
        std::shared_ptr<roll::workers::SharedWeights> shared;
        std::vector<double> secs;
        for (int r = 0; r <= o.repeats; ++r) {  // r == 0: the first sync, untimed
          ++version;
          if (rank == 0) perturb(w, version);
          group->barrier();
          const auto t0 = Clock::now();
          if (path == "shm" || path == "shm-share") {
            if (rank == 0) {
              if (!shared) shared = roll::workers::SharedWeights::create(shm_file, w);
              shared->write(w, version);
            }
            group->barrier();  // stands in for the driver's call to the infer worker
            if (rank == 1) {
              if (!shared) shared = roll::workers::SharedWeights::open(shm_file);
              if (adapters)
                engine->update_weights_in_place(
                    [&](const NamedTensors& own) { adapters->write_into(shared->views(), own); });
              else if (path == "shm") engine->update_weights(shared->views());
              else engine->share_weights(shared->views());
              engine->set_weight_version(version);
            }
          } else if (rank == 0) {
            roll::workers::broadcast_weights(*group, 0, &w, o.bucket_mb << 20);
          } else if (adapters) {
            NamedTensors received;
            roll::workers::receive_weights_into(
                *group, 0,
                [&](const std::string& name, at::ScalarType t, const std::vector<int64_t>& shape) {
                  received.emplace_back(name, at::empty(shape, at::TensorOptions().dtype(t)));
                  return received.back().second;
                },
                o.bucket_mb << 20);
            engine->update_weights_in_place([&](const NamedTensors& own) { adapters->write_into(received, own); });
            engine->set_weight_version(version);
          } else {
            engine->update_weights_in_place([&](const NamedTensors& own) {
              std::map<std::string, at::Tensor> by_name(own.begin(), own.end());
              roll::workers::receive_weights_into(
                  *group, 0, [&](const std::string& name, at::ScalarType, const std::vector<int64_t>&) {
                    return by_name.at(name);
                  },
                  o.bucket_mb << 20);
            });
            engine->set_weight_version(version);
          }
          group->barrier();
          if (r > 0) secs.push_back(seconds_since(t0));
        }
        // Ready to generate, with the last weights: one greedy token, and the marker perturb()
        // wrote into the first tensor checked.
        at::Tensor ok = at::zeros({1}, at::kLong);
        if (rank == 1) {
          roll::GenerationRequest req;
          req.request_id = "after-sync";
          req.prompt_token_ids = {1, 2, 3, 4};
          req.params.temperature = 0;
          req.params.max_new_tokens = 1;
          const auto out = engine->generate({req});
          const at::Tensor first = model->named_parameters().front().second;
          // (With adapters the marker is in the sender's adapters, not in the engine's weights.)
          ok.fill_(out.at(0).samples.at(0).token_ids.size() == 1 &&
                   (adapters || first.view({-1})[0].item<double>() == static_cast<double>(version)) &&
                   engine->weight_version() == version);
        }
        group->broadcast(ok, 1);
        if (rank == 0) {
          if (ok.item<int64_t>() != 1) {
            std::cerr << "bench_weight_sync: " << path << " " << preset << " " << dt
                      << ": the engine did not hold the last weights\n";
            ++failures;
          }
          if (o.lora_rank > 0)
            print("lora-" + path, preset, dt, o, bytes, secs, memcpy_s,
                  fmt::format(R"(,"lora_rank":{},"lora_target":"{}")", o.lora_rank, o.lora_target));
          else
            print(path, preset, dt, o, bytes, secs, memcpy_s);
        }
      }
    }
  if (rank == 0) {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(shm_file).parent_path(), ec);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // The two ranks share the cores as a trainer and an infer worker do, and the runtime starts
  // every worker with OMP_WAIT_POLICY=PASSIVE (runtime/cluster.cpp): a rank whose OpenMP threads
  // spin after their last parallel region takes a core from the other's merge or copy. libgomp
  // reads the variable when it loads, so the bench sets it and runs itself again; a value the
  // user set wins.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
    std::cerr << "bench_weight_sync: cannot run itself again with OMP_WAIT_POLICY=PASSIVE\n";
    return 1;
  }
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--presets") o.presets = split(next());
    else if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--paths") o.paths = split(next());
    else if (a == "--bucket-mb") o.bucket_mb = std::stoll(next());
    else if (a == "--repeats") o.repeats = std::max(1, std::stoi(next()));
    else if (a == "--threads") o.threads = std::max(1, std::stoi(next()));
    else if (a == "--smoke") o.presets = {"tiny"}, o.dtypes = {"fp32"}, o.repeats = 1;
    else if (a == "--rank") o.rank = std::stoi(next());
    else if (a == "--lora") o.lora_rank = std::stoll(next());
    else if (a == "--lora-target") o.lora_target = next();
    else if (a == "--master") {
      const std::string m = next();
      const auto colon = m.rfind(':');
      if (colon == std::string::npos) {
        std::cerr << "bench_weight_sync: --master takes HOST:PORT\n";
        return 2;
      }
      o.host = m.substr(0, colon);
      o.port = static_cast<uint16_t>(std::stoi(m.substr(colon + 1)));
    } else {
      std::cerr << "bench_weight_sync: unknown argument " << a << "\n";
      return 2;
    }
  }
  for (const auto& p : o.paths)
    if (p != "shm" && p != "shm-share" && p != "broadcast") {
      std::cerr << "bench_weight_sync: --paths takes shm, shm-share and broadcast, got " << p << "\n";
      return 2;
    }
  if (o.rank >= 0) {
    if (o.port == 0) {
      std::cerr << "bench_weight_sync: --rank needs --master HOST:PORT\n";
      return 2;
    }
    return run(o.rank, o);
  }
  // Rank 1 is this binary again (posix_spawn) with the same options, told the port the store
  // took (a free one: two runs at once do not collide).
  auto store = roll::comm::Store::tcp({o.host, 0, true, std::chrono::seconds(120)});
  o.port = store->port();
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  for (const std::string& a : {std::string("--rank"), std::string("1"), std::string("--master"),
                               fmt::format("{}:{}", o.host, o.port)})
    args.push_back(a);
  std::vector<char*> cargv;
  for (auto& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  pid_t child = -1;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, cargv.data(), environ) != 0) {
    std::cerr << "bench_weight_sync: cannot start the receiving rank\n";
    return 1;
  }
  const int rc = run(0, o, store);
  int status = 0;
  waitpid(child, &status, 0);
  return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
