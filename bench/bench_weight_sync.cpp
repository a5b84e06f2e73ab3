// Train -> infer weight sync time (docs/design.md section 7), as JSON lines:
//   broadcast  rank 0 sends a model's full weights to rank 1 over a Gloo "model update" group in
//              buckets of --bucket-mb (workers/weight_sync.h), two processes of this binary;
//   shm        rank 0 writes them as safetensors under /dev/shm and the receiver reads them back
//              (the colocated path), in one process.
// Per preset and dtype: bytes, seconds (median of --repeats), GB/s.
//
//   bench_weight_sync [--presets small,qwen2.5-0.5b-shape] [--dtypes fp32,bf16] [--bucket-mb 1024]
//                     [--repeats 3] [--smoke]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "roll/comm/process_group.h"
#include "roll/comm/store.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"
#include "roll/workers/weight_sync.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

roll::model::NamedTensors weights_of(const std::string& preset, at::ScalarType dtype) {
  auto m = roll::model::Transformer::random(roll::model::preset_config(preset, "qwen2"), dtype, 1);
  return m->named_parameters();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int64_t bytes_of(const roll::model::NamedTensors& w) {
  int64_t b = 0;
  for (const auto& [n, t] : w) b += t.numel() * static_cast<int64_t>(t.element_size());
  return b;
}

struct Options {
  std::vector<std::string> presets{"small", "qwen2.5-0.5b-shape"};
  std::vector<std::string> dtypes{"fp32", "bf16"};
  int64_t bucket_mb = 1024;
  int repeats = 3;
};

// Both ranks run this; rank 0 reports.
void run_broadcast(int rank, uint16_t port, const Options& o) {
  auto store = roll::comm::Store::tcp({"127.0.0.1", port, rank == 0, std::chrono::seconds(120)});
  roll::comm::GroupOptions go;
  go.name = "model_update";
  auto group = roll::comm::ProcessGroup::create(store, rank, 2, go);
  for (const auto& preset : o.presets)
    for (const auto& dt : o.dtypes) {
      const auto dtype = dt == "bf16" ? at::kBFloat16 : at::kFloat;
      roll::model::NamedTensors w;
      if (rank == 0) w = weights_of(preset, dtype);
      std::vector<double> secs;
      int64_t bytes = 0;
      for (int i = 0; i < o.repeats; ++i) {
        group->barrier();
        const auto t0 = Clock::now();
        roll::workers::SyncStats st;
        roll::workers::broadcast_weights(*group, 0, rank == 0 ? &w : nullptr, o.bucket_mb << 20, &st);
        group->barrier();
        secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        bytes = st.bytes;
      }
      if (rank == 0) {
        const double s = median(secs);
        std::cout << fmt::format(
                         R"({{"bench":"weight_sync","path":"broadcast","preset":"{}","dtype":"{}","bucket_mb":{},"bytes":{},"seconds":{:.4f},"gb_per_s":{:.3f},"repeats":{}}})",
                         preset, dt, o.bucket_mb, bytes, s, bytes / s / 1e9, o.repeats)
                  << std::endl;
      }
    }
}

void run_shm(const Options& o) {
  const std::string dir = fmt::format("/dev/shm/roll-bench-{}", getpid());
  for (const auto& preset : o.presets)
    for (const auto& dt : o.dtypes) {
      auto w = weights_of(preset, dt == "bf16" ? at::kBFloat16 : at::kFloat);
      std::vector<double> secs;
      for (int i = 0; i < o.repeats; ++i) {
        const auto t0 = Clock::now();
        auto file = roll::workers::write_weights_file(dir, w);
        auto back = roll::workers::read_weights_file(file);
        secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      const double s = median(secs);
      std::cout << fmt::format(
                       R"({{"bench":"weight_sync","path":"shm","preset":"{}","dtype":"{}","bytes":{},"seconds":{:.4f},"gb_per_s":{:.3f},"repeats":{}}})",
                       preset, dt, bytes_of(w), s, bytes_of(w) / s / 1e9, o.repeats)
                << std::endl;
    }
  std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--presets") o.presets = split(next());
    else if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--bucket-mb") o.bucket_mb = std::stoll(next());
    else if (a == "--repeats") o.repeats = std::stoi(next());
    else if (a == "--smoke") o.presets = {"tiny"}, o.dtypes = {"fp32"}, o.repeats = 1;
    else if (a == "--child") {
      run_broadcast(1, static_cast<uint16_t>(std::stoi(next())), o);
      return 0;
    }
  }
  at::set_num_threads(1);
  // Rank 1 is this binary again (posix_spawn), with the same options.
  const uint16_t port = static_cast<uint16_t>(29700 + getpid() % 1000);
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back("--child");
  args.push_back(std::to_string(port));
  std::vector<char*> cargv;
  for (auto& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  pid_t child = -1;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, cargv.data(), environ) != 0) {
    std::cerr << "bench_weight_sync: cannot start the receiving rank\n";
    return 1;
  }
  run_broadcast(0, port, o);
  int status = 0;
  waitpid(child, &status, 0);
  run_shm(o);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
