#pragma once
// Rendezvous store (docs/design.md section 3): a c10d TCPStore at MASTER_ADDR:MASTER_PORT. Rank 0 (or the
// driver) hosts it; everyone else connects. Workers publish endpoints here, and process groups
// rendezvous through it. c10d stays out of this header.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace roll::comm {

struct StoreOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 29500;  // 0 on a server: pick a free port (read it back with port())
  bool is_server = false;
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};  // connect and get/wait
};

class Store {
 public:
  // Hosts (is_server) or connects to a TCPStore. Errors name host:port.
  static std::shared_ptr<Store> tcp(const StoreOptions& options);
  // A view of `base` whose keys live under `prefix/` (one namespace per process group).
  static std::shared_ptr<Store> prefixed(const std::shared_ptr<Store>& base, const std::string& prefix);

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);  // waits for the key up to the timeout
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::vector<std::string>& keys);
  void wait(const std::vector<std::string>& keys);
  uint16_t port() const;  // the TCP port (0 for a prefixed view)

  struct Impl;
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace roll::comm
