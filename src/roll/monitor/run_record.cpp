#include "roll/monitor/run_record.h"

#include <signal.h>

#include <cerrno>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace roll::monitor {

std::string run_records_dir(const std::string& cluster_dir) { return cluster_dir + "/runs"; }

std::string write_run_record(const std::string& cluster_dir, const RunRecord& r) {
  const std::string dir = run_records_dir(cluster_dir);
  std::filesystem::create_directories(dir);
  const std::string path = fmt::format("{}/{}.json", dir, r.pid);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << nlohmann::json{{"pid", r.pid},
                          {"pipeline", r.pipeline},
                          {"exp_name", r.exp_name},
                          {"output_dir", r.output_dir},
                          {"dashboard_url", r.dashboard_url},
                          {"started_unix", r.started_unix}}
               .dump(2)
        << "\n";
  }
  std::filesystem::rename(tmp, path);
  return path;
}

std::vector<RunRecord> running_run_records(const std::string& cluster_dir) {
  std::vector<RunRecord> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run_records_dir(cluster_dir), ec)) {
    if (e.path().extension() != ".json") continue;
    try {
      std::ifstream in(e.path());
      const auto j = nlohmann::json::parse(in);
      RunRecord r;
      r.pid = j.at("pid").get<int>();
      r.pipeline = j.value("pipeline", "");
      r.exp_name = j.value("exp_name", "");
      r.output_dir = j.value("output_dir", "");
      r.dashboard_url = j.value("dashboard_url", "");
      r.started_unix = j.value("started_unix", 0.0);
      if (r.pid > 0 && (kill(r.pid, 0) == 0 || errno == EPERM)) {
        out.push_back(std::move(r));
        continue;
      }
    } catch (const std::exception&) {
    }
    std::filesystem::remove(e.path(), ec);  // its driver is gone (killed before it could remove it), or unreadable
  }
  std::sort(out.begin(), out.end(), [](const RunRecord& a, const RunRecord& b) { return a.started_unix < b.started_unix; });
  return out;
}

}  // namespace roll::monitor
