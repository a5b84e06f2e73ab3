#pragma once
// The step profile (docs/tracking.md, "Step profile"): where one pipeline step's wall time went and
// how busy each cluster's workers were during it. The phases are ROLL's time/step_* and time/*
// metrics the pipelines already record; this adds
//   time/step_wall        this step's wall time (time/step_total is, as in ROLL, the previous step's)
//   time/step_checkpoint  the step's do_checkpoint calls
//   time/step_overhead    wall time in no phase: the driver's own work between calls
//   system/busy/<cluster> the share of the step's wall time the cluster's workers spent working
//                         (serial RPC handlers, engine steps), averaged over its ranks
//   system/peak_rss_mb/<cluster>  the largest peak resident set (VmHWM) of the cluster's workers
//                         so far, in MiB: what `roll validate`'s memory plan predicts on CPU
// and one line for the step log.
#include <map>
#include <string>
#include <vector>

namespace roll::runtime {
class Cluster;
}

namespace roll::pipeline {

// One phase of a step: its label in the step log line and the metrics that may time it (the first
// one present counts; pipelines name the same phase differently, as ROLL's do).
struct StepPhase {
  const char* label;
  std::vector<const char*> metrics;
};
const std::vector<StepPhase>& step_phases();

// Wall time already in `m`'s phases plus time/step_checkpoint (summed from the do_checkpoint timers);
// sets time/step_wall, time/step_checkpoint and time/step_overhead. Returns the phase seconds by label.
std::map<std::string, double> add_step_times(std::map<std::string, double>& m, double wall_s);

// "2.31 s: rollout 0.65 (28%), old_log_probs 0.41 (18%), train 1.18 (51%), overhead 0.03 (1%); busy
// actor_train 55%, actor_infer 31%"
std::string format_step_profile(const std::map<std::string, double>& m);

// Samples every cluster's busy clocks (the workers' `__busy`) at the start of a step and again at its
// end; the difference over the step's wall time is system/busy/<cluster>.
class ClusterBusy {
 public:
  explicit ClusterBusy(std::vector<runtime::Cluster*> clusters);
  void start();
  void finish(std::map<std::string, double>& m, double wall_s);

 private:
  std::vector<std::vector<double>> sample();  // per cluster, per rank
  std::vector<runtime::Cluster*> clusters_;
  std::vector<std::vector<double>> at_start_;
  std::vector<double> peak_rss_mb_;  // per cluster, from the last sample
};

}  // namespace roll::pipeline
