#pragma once
// On-policy distillation (OPD) as ROLL lays it out (docs/opd.md). A pure OPD config names its
// roles student_train / student_infer / teacher; they run as actor_train / actor_infer and one
// reference-role cluster per teacher. `teacher` is one worker or a mapping of named workers, each
// with opd_kl_coef (default 1.0) and tag_included (the data tags it scores; empty: all).
// `use_opd` keeps the RL rewards and subtracts the same teacher KL from the advantages.
#include <string>
#include <utility>
#include <vector>

#include "roll/config/diagnostics.h"
#include "roll/config/node.h"
#include "roll/config/pipeline_config.h"

namespace roll::config {

// The teachers' nodes of an OPD config tree, in YAML order, with the key each was written under
// ("teacher" or "teacher.<name>") and its name ("default" for a single teacher).
struct OpdTeacherNode {
  std::string name;
  std::string key;
  NodePtr node;
};

// True when the tree is a pure OPD config: it has student_train or student_infer, or sets
// is_pure_opd (ROLL's OPD launcher forces is_pure_opd for its configs).
bool is_pure_opd_tree(const NodePtr& root);

// Rewrites an OPD tree in place before typing: student_train -> actor_train, student_infer ->
// actor_infer, is_pure_opd set; a multi-teacher `teacher` mapping is taken out of the tree (the
// loader types each teacher on its own). Returns the teachers; none for a config that is not OPD.
// Conflicts (actor_train beside student_train, is_pure_opd with use_opd, no teacher) go to `diag`.
// `force_pure`: is_pure_opd whatever the tree says (`roll opd`).
std::vector<OpdTeacherNode> take_opd_roles(const NodePtr& root, Diagnostics& diag, bool force_pure = false);

// `text` (or every key and message of `diag`) with actor_train / actor_infer named student_train /
// student_infer: the roles a pure OPD config wrote, which it runs as the RL roles.
std::string with_student_roles(std::string text);
Diagnostics with_student_roles(const Diagnostics& diag);

bool opd_enabled(const PipelineConfig& c);

// The cluster that runs OPD teacher `i`: "teacher" for a single teacher, else "teacher-<name>", as ROLL
// names their workers.
std::string opd_teacher_cluster(const PipelineConfig& c, size_t i);

// The config key a teacher was written under ("teacher" or "teacher.<name>"), for messages.
std::string opd_teacher_key(const PipelineConfig& c, size_t i);

// The worker config of the OPD teacher that cluster `cluster` runs; nullptr for any other cluster.
const WorkerConfig* opd_teacher_of(const PipelineConfig& c, const std::string& cluster);

}  // namespace roll::config
