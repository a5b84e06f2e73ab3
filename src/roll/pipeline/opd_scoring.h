#pragma once
// On-policy distillation's scoring step in the driver (docs/opd.md): every teacher cluster computes
// the log-probs of the sampled tokens on the rows routed to it, and the driver turns them into the
// per-token penalty the advantages take (rl/opd_penalty.h).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "roll/config/schema.h"
#include "roll/core/batch.h"
#include "roll/runtime/cluster.h"

namespace roll::pipeline {

// The rows each teacher scores, per teacher in config order (ROLL's routing): a teacher with an
// empty tag_included scores every row; otherwise the rows of each domain one of whose tags (the
// tag_included of that domain's reward, else the domain's own name) it lists.
std::vector<std::vector<int64_t>> opd_teacher_rows(const config::PipelineConfig& c,
                                                   const std::vector<std::string>& row_domains);

class OpdScoring {
 public:
  // Starts each teacher's forward on its rows of `forward` (input_ids, attention_mask, position_ids,
  // response_mask and the `domain` column), on the cluster `cluster_of` returns for its name.
  OpdScoring(const config::PipelineConfig& c, const Batch& forward,
             const std::function<runtime::Cluster&(const std::string&)>& cluster_of);

  // Waits for the teachers and sets on `batch`: opd_penalty [B, T] and ref_log_probs (each row's
  // first routed teacher; the student's own log-probs on rows no teacher scores), from the
  // student's log-probs: old_log_probs when they are recomputed, else infer_logprobs. Returns
  // opd/<cluster>/kl (the mean KL over the teacher's response tokens) and opd/<cluster>/rows, plus
  // the teachers' own worker metrics through `merge_worker_metrics`.
  std::map<std::string, double> finish(
      Batch& batch, const std::function<void(const runtime::Payload&, const std::string&)>& merge_worker_metrics);

 private:
  struct Pending {
    std::string cluster;
    std::vector<int64_t> rows;
    double kl_coef = 1.0;
    runtime::ClusterFuture future;
  };
  const config::PipelineConfig& c_;
  std::vector<Pending> pending_;
};

}  // namespace roll::pipeline
