// The engine's matrix product y = x w^T (engine::linear) beside the fastest peers, at the shapes
// of a 0.5B Qwen2.5 decoder (hidden 896, intermediate 4864, 2 kv heads of 64, vocabulary 151936)
// and M = 1, 8, 64, 512 rows, bf16 and fp32 weights. Prints JSON lines.
//
// Peers, each given its own preferred weight layout, prepared before timing:
//   - aten:   at::mm in the weights' dtype (bf16 activations for bf16 weights);
//   - onednn_packed: oneDNN's matmul (Debian libdnnl-dev), weights reordered to the layout it
//     picks; onednn_plain: the same on the weights as stored ([N, K] row-major);
//   - libxsmm: libxsmm's JIT kernels (Debian libxsmm-dev) on blocks of 64 output columns, weights
//     transposed (and for bf16 put in its VNNI pair layout), run by at::parallel_for.
// rollcpp's figure includes what it does to fp32 activations (rounding to bf16 where it uses
// native bf16 products); the peers get their inputs already in their dtype.
//
// Decode reads its weights from memory, not cache: each point cycles through enough copies of
// the weight to exceed --working-set-mb (default 256), so that M = 1 measures memory reads.
// Rounds interleave the implementations (A B C A B C ...); the summary gives rollcpp's ratio to
// the best peer of each round, min and max, per shape, and for one whole decoder layer (the sum
// of its seven products' times).
//
//   bench_linear [--threads 2] [--rounds 2] [--ms 1,8,64,512] [--dtypes bf16,fp32]
//                [--shapes q_o,k_v,gate_up,down,lm_head] [--working-set-mb 256] [--smoke]
//                [--bf16-products native|aten|split|widened] [--bf16-small-m-threshold N] [--fp32-small-m-threshold N]
//                [--fp32-products packed|blas]
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#if ROLL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif
#if ROLL_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

#include "roll/core/cpu_features.h"
#include "roll/core/parallel_for.h"
#include "roll/engine/cpu_kernels.h"
#include "roll/engine/linear.h"

using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
  std::string name;
  int64_t N, K;
  int per_layer;  // how many products of this shape one decoder layer runs
};

const std::vector<Shape> kShapes{
    {"q_o", 896, 896, 2}, {"k_v", 128, 896, 2}, {"gate_up", 4864, 896, 2}, {"down", 896, 4864, 1}, {"lm_head", 151936, 896, 0}};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

struct Options {
  int threads = 2, rounds = 2;
  std::vector<int64_t> ms{1, 8, 64, 512};
  std::vector<std::string> dtypes{"bf16", "fp32"};
  std::vector<std::string> shapes{"q_o", "k_v", "gate_up", "down", "lm_head"};
  int64_t working_set_mb = 256;
  bool smoke = false;
};

// One implementation prepared for one shape, dtype and M: call(i) runs the product on weight
// copy i and leaves the output where check() can read it as fp32 [M, N].
struct Impl {
  std::string name;
  std::function<void(int64_t copy)> call;
  std::function<at::Tensor()> output;
};

// Seconds per call: the best of repeated passes over all copies (after one warm-up pass),
// stopping after ~0.25 s of passes.
double seconds_per_call(const Impl& impl, int64_t copies) {
  auto pass = [&] {
    const auto t0 = Clock::now();
    for (int64_t c = 0; c < copies; ++c) impl.call(c);
    return std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(copies);
  };
  pass();
  double best = 1e30, spent = 0;
  for (int i = 0; i < 20 && (i < 3 || spent < 0.25); ++i) {
    const double s = pass();
    best = std::min(best, s);
    spent += s * static_cast<double>(copies);
  }
  return best;
}

Impl rollcpp_impl(const at::Tensor& x, const std::vector<at::Tensor>& w) {
  auto y = std::make_shared<at::Tensor>();
  return {"rollcpp", [x, &w, y](int64_t c) { *y = roll::engine::linear(x, w[c]); }, [y] { return *y; }};
}

Impl aten_impl(const at::Tensor& x, const std::vector<at::Tensor>& w) {
  auto xt = std::make_shared<at::Tensor>(x.to(w[0].scalar_type()));
  auto y = std::make_shared<at::Tensor>();
  std::vector<at::Tensor> wt;
  for (const auto& t : w) wt.push_back(t.t());
  return {"aten", [xt, wt, y](int64_t c) { *y = at::mm(*xt, wt[c]); }, [y] { return y->to(at::kFloat); }};
}

#if ROLL_HAVE_ONEDNN
// packed: weights reordered once to the layout oneDNN picks; else read where they are ([N, K]
// row-major, the checkpoint's layout).
Impl onednn_impl(const at::Tensor& x, const std::vector<at::Tensor>& w, bool packed) {
  using dnnl::memory;
  const int64_t M = x.size(0), K = x.size(1), N = w[0].size(0);
  const auto dt = w[0].scalar_type() == at::kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
  struct State {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{eng};
    at::Tensor x, y;
    memory src, dst;
    std::vector<memory> weights;
    dnnl::matmul prim;
  };
  auto st = std::make_shared<State>();
  st->x = x.to(w[0].scalar_type());
  st->y = at::empty({M, N}, x.options());
  memory::desc src_md({M, K}, dt, memory::format_tag::ab), dst_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc user_w({K, N}, dt, memory::format_tag::ba);
  memory::desc any_w = packed ? memory::desc({K, N}, dt, memory::format_tag::any) : user_w;
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, any_w, dst_md), st->eng);
  st->prim = dnnl::matmul(pd);
  st->src = memory(src_md, st->eng, st->x.data_ptr());
  st->dst = memory(dst_md, st->eng, st->y.data_ptr());
  for (const auto& t : w) {
    memory user(user_w, st->eng, t.data_ptr());
    if (pd.weights_desc() == user_w) {
      st->weights.push_back(user);
      continue;
    }
    memory reordered(pd.weights_desc(), st->eng);
    dnnl::reorder(user, reordered).execute(st->stream, user, reordered);
    st->weights.push_back(reordered);
  }
  st->stream.wait();
  return {packed ? "onednn_packed" : "onednn_plain",
          [st](int64_t c) {
            st->prim.execute(st->stream,
                             {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_WEIGHTS, st->weights[c]}, {DNNL_ARG_DST, st->dst}});
            st->stream.wait();
          },
          [st] { return st->y; }};
}
#endif

#if ROLL_HAVE_LIBXSMM
// Column-major view: y^T (N x M, ldc = N) = A (N x K) * x^T (K x M, ldb = K), A = w^T stored
// [K][N] (lda = N), for bf16 in VNNI pairs [K/2][N][2]. Blocks of 64 output columns per task.
Impl libxsmm_impl(const at::Tensor& x, const std::vector<at::Tensor>& w) {
  const int64_t M = x.size(0), K = x.size(1), N = w[0].size(0);
  const bool bf16 = w[0].scalar_type() == at::kBFloat16;
  if (N % 64 != 0 || (bf16 && K % 2 != 0)) return {};
  constexpr int64_t kNb = 64;
  const int64_t mb = std::min<int64_t>(M, 64);
  struct State {
    at::Tensor x, y;
    std::vector<at::Tensor> a;
    libxsmm_smmfunction sk = nullptr, sk_tail = nullptr;
    libxsmm_bsmmfunction bk = nullptr, bk_tail = nullptr;
  };
  auto st = std::make_shared<State>();
  st->x = x.to(w[0].scalar_type());
  st->y = at::empty({M, N}, x.options());
  for (const auto& t : w) {
    at::Tensor wt = t.t().contiguous();  // [K][N]
    if (bf16) wt = wt.view({K / 2, 2, N}).transpose(1, 2).contiguous();  // [K/2][N][2]
    st->a.push_back(wt);
  }
  const libxsmm_blasint m = kNb, k = K, lda = N, ldb = K, ldc = N, tail = M % mb;
  const float alpha = 1, beta = 0;
  const int flags = bf16 ? LIBXSMM_GEMM_FLAG_VNNI_A : LIBXSMM_GEMM_FLAG_NONE;
  const libxsmm_blasint n_full = mb, n_tail = tail;
  if (bf16) {
    st->bk = libxsmm_bsmmdispatch(m, n_full, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
    if (tail) st->bk_tail = libxsmm_bsmmdispatch(m, n_tail, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
    if (!st->bk || (tail && !st->bk_tail)) return {};
  } else {
    st->sk = libxsmm_smmdispatch(m, n_full, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
    if (tail) st->sk_tail = libxsmm_smmdispatch(m, n_tail, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
    if (!st->sk || (tail && !st->sk_tail)) return {};
  }
  const int64_t col_blocks = N / kNb, row_blocks = (M + mb - 1) / mb;
  return {"libxsmm",
          [st, col_blocks, row_blocks, mb, M, K, N, bf16](int64_t c) {
            float* y = st->y.data_ptr<float>();
            at::parallel_for(0, col_blocks * row_blocks, 1, [&](int64_t b0, int64_t b1) {
              for (int64_t b = b0; b < b1; ++b) {
                const int64_t n0 = (b % col_blocks) * kNb, m0 = (b / col_blocks) * mb;
                const bool full = m0 + mb <= M;
                float* out = y + m0 * N + n0;
                if (bf16) {
                  const auto* a = reinterpret_cast<const libxsmm_bfloat16*>(st->a[c].data_ptr()) + n0 * 2;
                  const auto* xb = reinterpret_cast<const libxsmm_bfloat16*>(st->x.data_ptr()) + m0 * K;
                  (full ? st->bk : st->bk_tail)(a, xb, out);
                } else {
                  const float* a = st->a[c].data_ptr<float>() + n0;
                  (full ? st->sk : st->sk_tail)(a, st->x.data_ptr<float>() + m0 * K, out);
                }
              }
            });
          },
          [st] { return st->y; }};
}
#endif

void print_peers_missing() {
#if !ROLL_HAVE_ONEDNN
  std::printf("{\"bench\":\"linear_peer_missing\",\"peer\":\"onednn\",\"why\":\"built without libdnnl-dev\"}\n");
#endif
#if !ROLL_HAVE_LIBXSMM
  std::printf("{\"bench\":\"linear_peer_missing\",\"peer\":\"libxsmm\",\"why\":\"built without libxsmm-dev\"}\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") o.threads = std::stoi(next());
    else if (a == "--rounds") o.rounds = std::stoi(next());
    else if (a == "--ms") {
      o.ms.clear();
      for (const auto& s : split(next())) o.ms.push_back(std::stoll(s));
    } else if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--shapes") o.shapes = split(next());
    else if (a == "--working-set-mb") o.working_set_mb = std::stoll(next());
    else if (a == "--bf16-small-m-threshold") roll::engine::linear_small_m_override(at::kBFloat16) = std::stoll(next());
    else if (a == "--fp32-small-m-threshold") roll::engine::linear_small_m_override(at::kFloat) = std::stoll(next());
    else if (a == "--fp32-products") {
      const std::string v = next();
      if (v != "packed" && v != "blas") {
        std::fprintf(stderr, "--fp32-products is packed or blas, not '%s'\n", v.c_str());
        return 2;
      }
      roll::engine::linear_packed_fp32() = v == "packed" && roll::engine::kernels::have_avx2();
    }
    else if (a == "--bf16-products") {
      const std::string v = next();
      if (!roll::engine::select_bf16_products(v)) {
        std::fprintf(stderr, "--bf16-products is native, aten, split or widened, not '%s'\n", v.c_str());
        return 2;
      }
    }
    else if (a == "--smoke") o.smoke = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (o.smoke) {
    o.rounds = 1;
    o.ms = {1, 8, 64};
    o.shapes = {"q_o", "k_v"};
    o.working_set_mb = 16;
  }
  at::set_num_threads(o.threads);
#if ROLL_HAVE_LIBXSMM
  libxsmm_init();
#endif
  const auto& cpu = roll::core::cpu_features();
  std::printf("{\"bench\":\"linear_machine\",\"cpu\":\"%s\",\"flags\":\"%s\",\"threads\":%d,\"bf16_path\":\"%s\"}\n",
              cpu.model.c_str(), cpu.flags().c_str(), o.threads, roll::engine::linear_path(at::kBFloat16));
  print_peers_missing();

  for (const auto& dtype_name : o.dtypes) {
    const at::ScalarType dtype = dtype_name == "bf16" ? at::kBFloat16 : at::kFloat;
    for (int64_t M : o.ms) {
      // seconds[impl][shape][round]
      std::map<std::string, std::map<std::string, std::vector<double>>> seconds;
      for (const auto& shape : kShapes) {
        if (std::find(o.shapes.begin(), o.shapes.end(), shape.name) == o.shapes.end()) continue;
        at::manual_seed(17);
        const int64_t bytes = shape.N * shape.K * (dtype == at::kBFloat16 ? 2 : 4);
        const int64_t copies = std::max<int64_t>(1, (o.working_set_mb << 20) / bytes);
        std::vector<at::Tensor> w;
        for (int64_t c = 0; c < copies; ++c) w.push_back(at::randn({shape.N, shape.K}).div_(30).to(dtype));
        const at::Tensor x = at::randn({M, shape.K});
        std::vector<Impl> impls{rollcpp_impl(x, w), aten_impl(x, w)};
#if ROLL_HAVE_ONEDNN
        // oneDNN has no bf16 matmul without AVX512 (it refuses the primitive on AVX2-only CPUs):
        // said once per peer and dtype.
        for (const bool packed : {true, false}) try {
            impls.push_back(onednn_impl(x, w, packed));
          } catch (const dnnl::error& e) {
            const std::string peer = packed ? "onednn_packed" : "onednn_plain";
            static std::set<std::string> said;
            if (said.insert(peer + "/" + dtype_name).second)
              std::printf("{\"bench\":\"linear_peer_missing\",\"peer\":\"%s\",\"dtype\":\"%s\",\"why\":\"%s\"}\n",
                          peer.c_str(), dtype_name.c_str(), e.what());
          }
#endif
#if ROLL_HAVE_LIBXSMM
        if (Impl l = libxsmm_impl(x, w); l.call) impls.push_back(std::move(l));
#endif
        // Every implementation against the float64 product of weight copy 0, the largest error
        // relative to the output's scale. bf16 peers round x to bf16 (2^-9 relative per term,
        // ~sqrt(K) 2^-9 |x||w| per output); rollcpp may not be more than twice the worst peer's
        // error plus fp32 summation (sqrt(K) eps), or the bench fails.
        const at::Tensor ref = at::mm(x.to(at::kDouble), w[0].to(at::kDouble).t());
        const double scale = ref.abs().max().item<double>();
        double ours = 0, worst_peer = 0;
        for (const auto& impl : impls) {
          impl.call(0);
          const double err = (impl.output().to(at::kDouble) - ref).abs().max().item<double>() / scale;
          (impl.name == "rollcpp" ? ours : worst_peer) = std::max(impl.name == "rollcpp" ? ours : worst_peer, err);
          std::printf("{\"bench\":\"linear_check\",\"dtype\":\"%s\",\"m\":%ld,\"shape\":\"%s\",\"impl\":\"%s\","
                      "\"max_rel_err\":%.3g}\n",
                      dtype_name.c_str(), M, shape.name.c_str(), impl.name.c_str(), err);
        }
        if (ours > 2 * worst_peer + std::sqrt(static_cast<double>(shape.K)) * 1.2e-7) {
          std::fprintf(stderr, "bench_linear: rollcpp's %s product (M=%ld, %s) is off by %.3g of the output's scale, "
                               "the peers by at most %.3g\n", dtype_name.c_str(), M, shape.name.c_str(), ours, worst_peer);
          return 1;
        }
        for (int r = 0; r < o.rounds; ++r)
          for (const auto& impl : impls) {
            const double s = seconds_per_call(impl, copies);
            seconds[impl.name][shape.name].push_back(s);
            std::printf("{\"bench\":\"linear\",\"round\":%d,\"dtype\":\"%s\",\"m\":%ld,\"shape\":\"%s\",\"n\":%ld,"
                        "\"k\":%ld,\"impl\":\"%s\",\"us\":%.1f,\"gflop_s\":%.1f,\"weight_gb_s\":%.2f}\n",
                        r + 1, dtype_name.c_str(), M, shape.name.c_str(), shape.N, shape.K, impl.name.c_str(), s * 1e6,
                        2.0 * M * shape.N * shape.K / s * 1e-9, bytes / s * 1e-9);
            std::fflush(stdout);
          }
      }
      // rollcpp / best peer per round, per shape and for a whole decoder layer.
      auto summarise = [&](const std::string& what, const std::function<double(const std::string&, int)>& time_of) {
        double lo = 1e30, hi = 0;
        std::string best_peer;
        for (int r = 0; r < o.rounds; ++r) {
          double best = 1e30;
          for (const auto& [impl, _] : seconds) {
            if (impl == "rollcpp") continue;
            const double t = time_of(impl, r);
            if (t < best) best = t, best_peer = impl;
          }
          const double ratio = best / time_of("rollcpp", r);
          lo = std::min(lo, ratio), hi = std::max(hi, ratio);
        }
        std::printf("{\"bench\":\"linear_ratio\",\"ratio\":\"rollcpp/best_peer\",\"dtype\":\"%s\",\"m\":%ld,"
                    "\"shape\":\"%s\",\"best_peer\":\"%s\",\"min\":%.3f,\"max\":%.3f}\n",
                    dtype_name.c_str(), M, what.c_str(), best_peer.c_str(), lo, hi);
      };
      for (const auto& shape : kShapes)
        if (seconds["rollcpp"].count(shape.name))
          summarise(shape.name, [&](const std::string& impl, int r) {
            const auto& v = seconds[impl][shape.name];
            return v.empty() ? 1e30 : v[r];
          });
      bool whole_layer = true;
      for (const auto& shape : kShapes)
        if (shape.per_layer > 0 && !seconds["rollcpp"].count(shape.name)) whole_layer = false;
      if (whole_layer)
        summarise("decoder_layer", [&](const std::string& impl, int r) {
          double t = 0;
          for (const auto& shape : kShapes)
            if (shape.per_layer > 0) {
              auto& v = seconds[impl][shape.name];
              if (v.empty()) return 1e30;  // a peer without this shape cannot run the layer
              t += shape.per_layer * v[r];
            }
          return t;
        });
    }
  }
  return 0;
}
