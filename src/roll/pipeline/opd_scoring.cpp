#include "roll/pipeline/opd_scoring.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "roll/config/opd.h"
#include "roll/core/error.h"
#include "roll/rl/opd_penalty.h"
#include "roll/workers/rpc_methods.h"

namespace roll::pipeline {

std::vector<std::vector<int64_t>> opd_teacher_rows(const config::PipelineConfig& c,
                                                   const std::vector<std::string>& row_domains) {
  std::map<std::string, std::set<std::string>> domain_tags;
  for (const auto& [domain, reward] : c.rewards)
    domain_tags[domain].insert(reward.worker.tag_included.begin(), reward.worker.tag_included.end());
  auto tags_of = [&](const std::string& domain) {
    auto it = domain_tags.find(domain);
    return it == domain_tags.end() || it->second.empty() ? std::set<std::string>{domain} : it->second;
  };
  std::vector<std::vector<int64_t>> out(c.opd_teachers.size());
  for (size_t t = 0; t < c.opd_teachers.size(); ++t) {
    const auto& wanted = c.opd_teachers[t].second.tag_included;
    std::map<std::string, bool> routed;  // per domain
    for (int64_t row = 0; row < static_cast<int64_t>(row_domains.size()); ++row) {
      const std::string& d = row_domains[row];
      auto it = routed.find(d);
      if (it == routed.end()) {
        bool any = wanted.empty();
        for (const auto& tag : tags_of(d))
          any = any || std::find(wanted.begin(), wanted.end(), tag) != wanted.end();
        it = routed.emplace(d, any).first;
      }
      if (it->second) out[t].push_back(row);
    }
  }
  return out;
}

OpdScoring::OpdScoring(const config::PipelineConfig& c, const Batch& forward,
                       const std::function<runtime::Cluster&(const std::string&)>& cluster_of)
    : c_(c) {
  std::vector<std::string> domains(forward.size());
  for (int64_t i = 0; i < forward.size(); ++i) domains[i] = forward.get_string("domain", i);
  const auto rows = opd_teacher_rows(c, domains);
  const Batch tensors = forward.select({"input_ids", "attention_mask", "position_ids", "response_mask"}, {});
  for (size_t t = 0; t < c.opd_teachers.size(); ++t) {
    Pending p;
    p.cluster = config::opd_teacher_cluster(c, t);
    p.rows = rows[t];
    p.kl_coef = c.opd_teachers[t].second.opd_kl_coef.value_or(1.0);
    if (!p.rows.empty())
      p.future = cluster_of(p.cluster).call(workers::rpc::kComputeLogProbs, runtime::Dispatch::dp_mp_compute,
                                            runtime::Payload(tensors.take(p.rows)));
    pending_.push_back(std::move(p));
  }
}

std::map<std::string, double> OpdScoring::finish(
    Batch& batch, const std::function<void(const runtime::Payload&, const std::string&)>& merge_worker_metrics) {
  const char* student_key = c_.enable_old_logprobs_recompute ? "old_log_probs" : "infer_logprobs";
  if (!batch.has_tensor(student_key))
    throw Error(fmt::format("on-policy distillation: the rollout has no {} to compare with the teachers", student_key));
  const at::Tensor student = batch.tensor(student_key).to(at::kFloat);
  const at::Tensor mask = batch.tensor("response_mask").slice(1, 1).to(at::kFloat);
  const int64_t B = student.size(0);
  std::map<std::string, double> m;
  std::vector<rl::OpdTeacherScores> scores;
  at::Tensor ref = student.clone();
  at::Tensor filled = at::zeros({B}, at::kBool);
  for (auto& p : pending_) {
    rl::OpdTeacherScores s;
    s.kl_coef = p.kl_coef;
    s.rows = at::zeros({B}, at::kBool);
    s.log_probs = at::zeros_like(student);
    m["opd/" + p.cluster + "/rows"] = static_cast<double>(p.rows.size());
    if (!p.rows.empty()) {
      runtime::Payload r = p.future.get();
      merge_worker_metrics(r, p.cluster + "." + workers::rpc::kComputeLogProbs);
      const at::Tensor index = at::tensor(p.rows, at::kLong);
      s.rows.index_fill_(0, index, true);
      s.log_probs.index_copy_(0, index, r.batch->tensor("log_probs").to(at::kFloat));
      const at::Tensor first = s.rows & ~filled;
      ref = at::where(first.unsqueeze(1), s.log_probs, ref);
      filled = filled | s.rows;
    }
    scores.push_back(std::move(s));
  }
  std::vector<double> kl_means;
  batch.set_tensor("opd_penalty",
                   rl::opd_kl_penalty(student, scores, mask, rl::parse_kl_type(c_.kl_penalty), &kl_means));
  // Each teacher's own KL, unweighted, over its response tokens: what distillation drives down.
  for (size_t t = 0; t < pending_.size(); ++t)
    if (!pending_[t].rows.empty()) m["opd/" + pending_[t].cluster + "/kl"] = kl_means[t];
  batch.set_tensor("ref_log_probs", ref);
  return m;
}

}  // namespace roll::pipeline
