#include "roll/monitor/run_status.h"

#include <httplib.h>

#include <sstream>

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::monitor {
namespace {

std::string number_or_dash(const nlohmann::json& v, const char* format) {
  return v.is_number() ? fmt::format(fmt::runtime(format), v.get<double>()) : "-";
}

}  // namespace

nlohmann::json fetch_dashboard_json(const std::string& dashboard_url, const std::string& path,
                                    std::chrono::milliseconds timeout) {
  // dashboard_url: "http://host:port/"
  std::string base = dashboard_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  httplib::Client client(base);
  client.set_connection_timeout(std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
  client.set_read_timeout(std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
  auto res = client.Get(path.c_str());
  if (!res) throw Error(fmt::format("the dashboard at {} does not answer {} ({})", dashboard_url, path, httplib::to_string(res.error())));
  if (res->status != 200) throw Error(fmt::format("the dashboard at {} answered {} with HTTP {}: {}", dashboard_url, path, res->status, res->body));
  try {
    return nlohmann::json::parse(res->body);
  } catch (const std::exception& e) {
    throw Error(fmt::format("the dashboard at {} answered {} with malformed JSON: {}", dashboard_url, path, e.what()));
  }
}

std::string format_run_status(const RunRecord& run, const nlohmann::json& state) {
  std::ostringstream s;
  const auto& r = state.at("run");
  s << fmt::format("Run {} ({} {}): {}, step {} / {}", run.pid, r.value("pipeline", ""), r.value("exp_name", ""),
                   r.value("state", ""), r.value("step", 0), r.value("max_steps", 0));
  if (const auto eta = r.value("eta_s", nlohmann::json()); eta.is_number()) s << fmt::format(", ETA {:.0f} s", eta.get<double>());
  s << "\n  dashboard " << run.dashboard_url << "\n  output_dir " << run.output_dir << "\n";
  if (!r.value("error", std::string()).empty()) s << "  error: " << r.value("error", std::string()) << "\n";
  s << fmt::format("  {:<28} {:<16} {:>4} {:>4} {:>8}  {:<28} {:>6} {:>9}\n", "worker", "cluster", "rank", "node", "pid",
                   "state", "CPU %", "RSS MB");
  for (const auto& w : state.value("workers", nlohmann::json::array())) {
    const nlohmann::json call = w.value("call", nlohmann::json());
    std::string what = !w.value("alive", true) ? "exited"
                       : call.is_string()      ? fmt::format("{} {:.1f} s", call.get<std::string>(), w.value("call_s", 0.0))
                                               : "idle";
    s << fmt::format("  {:<28} {:<16} {:>4} {:>4} {:>8}  {:<28} {:>6} {:>9}\n", w.value("name", ""), w.value("cluster", ""),
                     w.value("rank", 0), w.value("node", 0), w.value("pid", 0), what,
                     number_or_dash(w.value("cpu_percent", nlohmann::json()), "{:.0f}"),
                     number_or_dash(w.value("rss_mb", nlohmann::json()), "{:.0f}"));
  }
  for (const auto& st : state.value("stalls", nlohmann::json::array()))
    s << fmt::format("  watchdog: {} in '{}' for {:.0f} s (bound {:.0f} s){}\n", st.value("worker", ""), st.value("method", ""),
                     st.value("running_s", 0.0), st.value("bound_s", 0.0),
                     st.value("answered", false) ? "" : "; no answer, state " + st.value("process_state", std::string("?")));
  for (const auto& h : r.value("hung_envs", nlohmann::json::array()))
    s << fmt::format("  env monitor: group {} env {} has played episode {} for {:.0f} s without a rollout\n",
                     h.value("group_id", 0), h.value("env_id", 0), h.value("episode_id", 0), h.value("seconds", 0.0));
  return s.str();
}

std::string format_run_stacks(const nlohmann::json& stacks) {
  std::ostringstream s;
  for (const auto& w : stacks.value("workers", nlohmann::json::array())) {
    s << "== " << w.value("worker", "") << "\n";
    if (w.value("answered", false)) s << w.value("text", "");
    else s << "  does not answer; process state " << (w.value("process_state", "").empty() ? "unknown (another node)" : w.value("process_state", "")) << "\n";
  }
  return s.str();
}

}  // namespace roll::monitor
