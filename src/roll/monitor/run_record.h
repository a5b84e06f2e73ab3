#pragma once
// How `roll status` finds the runs of this machine (docs/dashboard.md): each driver writes
// <cluster dir>/runs/<pid>.json (the pipeline, exp_name, output_dir and its dashboard's address)
// while it runs and removes it when it ends; a record whose process is gone is skipped and removed.
#include <optional>
#include <string>
#include <vector>

namespace roll::monitor {

struct RunRecord {
  int pid = 0;
  std::string pipeline, exp_name, output_dir;
  std::string dashboard_url;  // "" without a dashboard
  double started_unix = 0;
};

std::string run_records_dir(const std::string& cluster_dir);
// Writes this process's record (atomically: a temporary file renamed); returns its path.
std::string write_run_record(const std::string& cluster_dir, const RunRecord& r);
// The records of running processes, oldest first.
std::vector<RunRecord> running_run_records(const std::string& cluster_dir);

}  // namespace roll::monitor
