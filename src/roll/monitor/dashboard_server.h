#pragma once
// The run's dashboard (docs/dashboard.md): an HTTP server in the driver on DASHBOARD_PORT /
// --dashboard-port (8265 as Ray's; 0 turns it off) that serves one live page and its data as JSON
// under /api/: the run (step i of N, ETA, the last step's phases), the workers (call in flight,
// CPU %, RSS), the metrics, checkpoints, worker log tails, the watchdog's stall reports, and every
// thread's stack of a worker on demand. Read-only; it binds where the driver's services bind.
#include <memory>
#include <string>

namespace roll::runtime {
class Runtime;
}

namespace roll::monitor {

class RunBoard;

struct DashboardOptions {
  std::string host = "127.0.0.1";
  int port = 8265;  // taken: a free port instead, with a warning; 0: any free port
  std::string log_dir;  // the workers' logs (RuntimeOptions::log_dir)
};

class DashboardServer {
 public:
  DashboardServer(DashboardOptions options, std::shared_ptr<RunBoard> board);
  ~DashboardServer();  // stops serving
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // The runtime whose workers the page lists; null before the clusters start and after they stop.
  void attach(const runtime::Runtime* runtime);
  int port() const;
  std::string url() const;  // http://host:port/

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::monitor
