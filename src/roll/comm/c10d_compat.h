#pragma once
// The one place that knows which libtorch c10d API we build against. Include it only from
// comm/*.cpp: it pulls in c10d (and Gloo/NCCL) headers.
//
// libtorch 1.13 (Debian): ProcessGroupGloo and ProcessGroupNCCL derive from c10d::ProcessGroup,
// which carries the collectives. libtorch 2.x splits a dispatching c10d::ProcessGroup from
// c10d::Backend, and the Gloo/NCCL classes derive from Backend. We always talk to exactly one
// backend object, so `Backend` below names whichever class carries the collectives; the collective
// signatures (vector<Tensor>&, options structs) are the same in both. Unverified on 2.x until a
// CUDA build checks it (docs/training.md, "Not yet").
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/version.h>
#if defined(USE_C10D_GLOO)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace roll::comm::compat {

#if TORCH_VERSION_MAJOR >= 2
using Backend = ::c10d::Backend;
#else
using Backend = ::c10d::ProcessGroup;
#endif
using BackendPtr = c10::intrusive_ptr<Backend>;
using WorkPtr = c10::intrusive_ptr<::c10d::Work>;
using StorePtr = c10::intrusive_ptr<::c10d::Store>;

inline StorePtr make_tcp_store(const std::string& host, uint16_t port, bool is_server,
                               std::chrono::milliseconds timeout) {
  ::c10d::TCPStoreOptions opts;
  opts.port = port;
  opts.isServer = is_server;
  // Peers find each other through the process group's own rendezvous (with its timeout), so the
  // server never blocks in its constructor waiting for a worker count.
  opts.waitWorkers = false;
  opts.timeout = timeout;
  return c10::make_intrusive<::c10d::TCPStore>(host, opts);
}

inline uint16_t tcp_store_port(const StorePtr& store) {
  auto* tcp = dynamic_cast<::c10d::TCPStore*>(store.get());
  return tcp ? tcp->getPort() : 0;
}

inline StorePtr make_prefix_store(const std::string& prefix, const StorePtr& store) {
  return c10::make_intrusive<::c10d::PrefixStore>(prefix, store);
}

// A Gloo transport device bound to an interface name or a numeric address (never a hostname:
// a hostname that resolves to 127.0.1.1, as Debian's /etc/hosts does, hangs multi-node jobs).
struct GlooDevice {
  bool by_interface = false;
  std::string value;  // interface name or IP address
};

#if defined(USE_C10D_GLOO)
inline BackendPtr make_gloo(const StorePtr& store, int rank, int size, const std::vector<GlooDevice>& devices,
                            std::chrono::milliseconds timeout, int threads) {
  auto opts = ::c10d::ProcessGroupGloo::Options::create(timeout);
  for (const GlooDevice& d : devices)
    opts->devices.push_back(d.by_interface ? ::c10d::ProcessGroupGloo::createDeviceForInterface(d.value)
                                           : ::c10d::ProcessGroupGloo::createDeviceForHostname(d.value));
  opts->threads = threads;
  return c10::make_intrusive<::c10d::ProcessGroupGloo>(store, rank, size, opts);
}
constexpr bool kHaveGloo = true;
#else
constexpr bool kHaveGloo = false;
#endif

#if defined(USE_C10D_NCCL)
inline BackendPtr make_nccl(const StorePtr& store, int rank, int size, std::chrono::milliseconds timeout) {
  auto opts = ::c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<::c10d::ProcessGroupNCCL>(store, rank, size, opts);
}
constexpr bool kHaveNccl = true;
#else
constexpr bool kHaveNccl = false;
#endif

inline ::c10d::ReduceOp reduce_op_sum() { return ::c10d::ReduceOp(::c10d::ReduceOp::SUM); }
inline ::c10d::ReduceOp reduce_op_max() { return ::c10d::ReduceOp(::c10d::ReduceOp::MAX); }
inline ::c10d::ReduceOp reduce_op_min() { return ::c10d::ReduceOp(::c10d::ReduceOp::MIN); }

}  // namespace roll::comm::compat
