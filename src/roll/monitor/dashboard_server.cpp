#include "roll/monitor/dashboard_server.h"

#include <httplib.h>

#include <future>
#include <shared_mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "roll/core/file_tail.h"
#include "roll/core/log.h"
#include "roll/core/thread_stacks.h"
#include "roll/monitor/dashboard_page.h"
#include "roll/monitor/run_board.h"
#include "roll/monitor/worker_table.h"
#include "roll/runtime/runtime.h"
#include "roll/runtime/worker_launch.h"

namespace roll::monitor {
namespace {

void reply_json(httplib::Response& res, const nlohmann::json& j, int status = 200) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

}  // namespace

struct DashboardServer::Impl {
  DashboardOptions options;
  std::shared_ptr<RunBoard> board;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  WorkerTable table;
  // Handlers read the runtime under a shared lock; attach() swaps it under the exclusive one, so a
  // runtime is never destroyed while a request reads it.
  mutable std::shared_mutex runtime_mu;
  const runtime::Runtime* runtime = nullptr;

  nlohmann::json state() {
    nlohmann::json j{{"run", board->run_json()},
                     {"checkpoints", board->checkpoints_json()},
                     {"metric_names", board->metric_names()},
                     {"workers", nlohmann::json::array()},
                     {"in_flight", nlohmann::json::array()},
                     {"stalls", nlohmann::json::array()}};
    j["run"]["pid"] = static_cast<int64_t>(getpid());
    std::shared_lock<std::shared_mutex> g(runtime_mu);
    if (runtime) {
      nlohmann::json t = table.sample(*runtime);
      j["workers"] = std::move(t["workers"]);
      j["in_flight"] = std::move(t["in_flight"]);
      for (const auto& r : runtime->watchdog().reports()) j["stalls"].push_back(r.to_json());
    }
    return j;
  }

  // Every worker (or the one named `only`) with its cluster and rank.
  template <class F>
  void each_worker(const std::string& only, F f) {
    for (const auto& cluster : runtime->clusters())
      for (int rank = 0; rank < cluster->world_size(); ++rank) {
        const auto& wp = cluster->spec().placement.workers.at(static_cast<size_t>(rank));
        if (only.empty() || only == wp.name) f(*cluster, rank, wp);
      }
  }

  // Local workers' logs are read here; a worker on another node sends its tail (__log_tail).
  nlohmann::json logs(const std::string& only, size_t lines, bool& found) {
    nlohmann::json out = nlohmann::json::array();
    std::shared_lock<std::shared_mutex> g(runtime_mu);
    if (!runtime) return out;
    struct Remote {
      size_t index;
      std::future<std::optional<runtime::Payload>> answer;
    };
    std::vector<Remote> remote;
    each_worker(only, [&](runtime::Cluster& c, int rank, const config::WorkerPlacement& wp) {
      found = true;
      const std::string path = runtime::worker_log_file(options.log_dir, wp.name, rank, c.world_size());
      nlohmann::json w{{"worker", wp.name}, {"path", path}, {"lines", nlohmann::json::array()}};
      if (c.activity(rank).on_this_node) {
        w["lines"] = core::last_lines(path, lines);
      } else {
        w["node"] = wp.node;
        remote.push_back({out.size(), std::async(std::launch::async, [&c, rank, lines] {
                            return c.ask(rank, runtime::kLogTailMethod, std::chrono::seconds(5),
                                         runtime::Payload(nlohmann::json{{"lines", lines}}));
                          })});
      }
      out.push_back(std::move(w));
    });
    for (auto& r : remote) {
      auto answer = r.answer.get();
      auto& w = out[r.index];
      if (!answer) {
        w["note"] = fmt::format("the worker on node {} did not send its log", w["node"].dump());
        continue;
      }
      w["path"] = answer->args.value("path", std::string());
      w["lines"] = answer->args.value("lines", nlohmann::json::array());
    }
    return out;
  }

  nlohmann::json stacks(const std::string& only, bool& found) {
    std::shared_lock<std::shared_mutex> g(runtime_mu);
    nlohmann::json out = nlohmann::json::array();
    if (!runtime) return out;
    struct Ask {
      std::string name, worker;
      runtime::Cluster::RankActivity activity;
      std::future<std::optional<runtime::Payload>> answer;
    };
    std::vector<Ask> asks;
    each_worker(only, [&](runtime::Cluster& c, int rank, const config::WorkerPlacement& wp) {
      found = true;
      asks.push_back({wp.name, c.describe(rank), c.activity(rank), std::async(std::launch::async, [&c, rank] {
                        return c.ask(rank, runtime::kStacksMethod, std::chrono::seconds(10));
                      })});
    });
    for (auto& a : asks) {
      auto answer = a.answer.get();
      nlohmann::json w{{"name", a.name}, {"worker", a.worker}, {"answered", answer.has_value()}, {"text", ""},
                       {"process_state", ""}};
      if (answer) {
        w["text"] = answer->args.value("text", std::string());
        w["threads"] = answer->args.value("threads", nlohmann::json::array());
      }
      if (a.activity.on_this_node && a.activity.pid > 0) w["process_state"] = core::process_state(a.activity.pid);
      out.push_back(std::move(w));
    }
    return out;
  }

  void routes() {
    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      const auto page = dashboard_page_html();
      res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
    });
    server.Get("/api/state", [this](const httplib::Request&, httplib::Response& res) { reply_json(res, state()); });
    server.Get("/api/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      size_t since = 0;
      if (req.has_param("since")) since = static_cast<size_t>(std::max(0LL, std::atoll(req.get_param_value("since").c_str())));
      reply_json(res, board->metrics_since(since));
    });
    server.Get("/api/logs", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string only = req.has_param("worker") ? req.get_param_value("worker") : "";
      size_t lines = 50;
      if (req.has_param("lines")) lines = static_cast<size_t>(std::clamp(std::atoll(req.get_param_value("lines").c_str()), 1LL, 2000LL));
      bool found = false;
      nlohmann::json w = logs(only, lines, found);
      if (!only.empty() && !found) return reply_json(res, {{"error", "no worker named '" + only + "'"}}, 404);
      reply_json(res, {{"workers", std::move(w)}});
    });
    server.Get("/api/stacks", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string only = req.has_param("worker") ? req.get_param_value("worker") : "";
      bool found = false;
      nlohmann::json w = stacks(only, found);
      if (!only.empty() && !found) return reply_json(res, {{"error", "no worker named '" + only + "'"}}, 404);
      reply_json(res, {{"workers", std::move(w)}});
    });
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      reply_json(res, {{"error", what}}, 500);
    });
  }
};

DashboardServer::DashboardServer(DashboardOptions options, std::shared_ptr<RunBoard> board)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->board = std::move(board);
  impl_->routes();
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second run on this
  // machine would share the port instead of finding it taken.
  impl_->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
  });
  auto& o = impl_->options;
  if (o.port > 0 && impl_->server.bind_to_port(o.host.c_str(), o.port)) {
    impl_->port = o.port;
  } else if (o.port == 0) {
    impl_->port = impl_->server.bind_to_any_port(o.host.c_str());
    if (impl_->port <= 0) throw Error(fmt::format("dashboard: cannot listen on {}", o.host));
  } else {
    impl_->port = impl_->server.bind_to_any_port(o.host.c_str());
    if (impl_->port <= 0) throw Error(fmt::format("dashboard: cannot listen on {} (port {} nor any other)", o.host, o.port));
    log::warn("dashboard: port {} on {} is taken; serving on port {} instead", o.port, o.host, impl_->port);
  }
  impl_->thread = std::thread([s = &impl_->server] { s->listen_after_bind(); });
}

DashboardServer::~DashboardServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void DashboardServer::attach(const runtime::Runtime* runtime) {
  std::unique_lock<std::shared_mutex> g(impl_->runtime_mu);
  impl_->runtime = runtime;
}

int DashboardServer::port() const { return impl_->port; }

std::string DashboardServer::url() const { return fmt::format("http://{}:{}/", impl_->options.host, impl_->port); }

}  // namespace roll::monitor
