#include "roll/config/opd.h"

#include <cstring>

#include "roll/config/key_registry.h"

namespace roll::config {
namespace {

bool is_true(const NodePtr& n) {
  return n && n->is_scalar() && (n->text() == "true" || n->text() == "True" || n->text() == "1");
}

bool is_set(const NodePtr& n) { return n && !n->is_null(); }

// ROLL types `teacher` as Dict[str, WorkerConfig] first and falls back to one WorkerConfig: a
// mapping is a set of named teachers when each value is a mapping and no key is a worker key.
bool is_teacher_mapping(const NodePtr& teacher) {
  if (!teacher->is_map() || teacher->entries().empty()) return false;
  for (const auto& [k, v] : teacher->entries())
    if (!v || !v->is_map() || find_key_entry("WorkerConfig", k)) return false;
  return true;
}

}  // namespace

bool is_pure_opd_tree(const NodePtr& root) {
  return root && root->is_map() &&
         (is_set(root->get("student_train")) || is_set(root->get("student_infer")) || is_true(root->get("is_pure_opd")));
}

std::vector<OpdTeacherNode> take_opd_roles(const NodePtr& root, Diagnostics& diag, bool force_pure) {
  const bool pure = force_pure || is_pure_opd_tree(root);
  const bool mixed = is_true(root->get("use_opd"));
  if (!pure && !mixed) return {};
  if (pure && mixed)
    diag.error("use_opd", "is_pure_opd (a config with student_train/student_infer) and use_opd exclude each other: "
                          "pure OPD learns from the teacher KL alone, use_opd adds it to the RL rewards");
  if (NodePtr type = root->get("pure_opd_pipeline_type");
      is_set(type) && !(type->is_scalar() && (type->text() == "rlvr" || type->text() == "agentic")))
    diag.error("pure_opd_pipeline_type", "expected rlvr or agentic");
  if (pure) {
    for (auto [from, to] : {std::pair{"student_train", "actor_train"}, {"student_infer", "actor_infer"}}) {
      NodePtr n = root->get(from);
      if (!is_set(n)) {
        diag.error(from, "pure on-policy distillation needs student_train, student_infer and teacher");
        continue;
      }
      if (is_set(root->get(to)))
        diag.error(to, std::string("an on-policy distillation config sets ") + from + ", which runs as " + to +
                           ": remove one of them");
      root->set(to, n);
      root->erase(from);
    }
    root->set("is_pure_opd", Node::scalar("true"));
  }
  if (mixed && is_set(root->get("reference")))
    diag.error("reference", "with use_opd the teachers are the reference models: remove `reference` (as ROLL requires)");
  NodePtr teacher = root->get("teacher");
  if (!is_set(teacher) || !teacher->is_map()) {
    diag.error("teacher", "on-policy distillation needs a teacher: one worker (model_args, device_mapping, ...) or a "
                          "mapping of named teachers");
    return {};
  }
  std::vector<OpdTeacherNode> out;
  if (is_teacher_mapping(teacher)) {
    for (const auto& [name, node] : teacher->entries()) out.push_back({name, "teacher." + name, node});
    root->erase("teacher");  // typed per teacher by the loader, not as DistillConfig's single teacher
  } else {
    out.push_back({"default", "teacher", teacher});
  }
  return out;
}

std::string with_student_roles(std::string text) {
  for (auto [from, to] : {std::pair{"actor_train", "student_train"}, {"actor_infer", "student_infer"}})
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + std::strlen(to)))
      text.replace(at, std::strlen(from), to);
  return text;
}

Diagnostics with_student_roles(const Diagnostics& diag) {
  auto rename = [](const std::string& text) { return with_student_roles(text); };
  Diagnostics out;
  for (const auto& e : diag.errors()) out.error(rename(e.key), rename(e.message));
  for (const auto& w : diag.warnings()) out.warn(rename(w.key), rename(w.message));
  for (const auto& u : diag.unknown_keys()) out.unknown_key(rename(u.key), u.message);
  return out;
}

bool opd_enabled(const PipelineConfig& c) { return c.is_pure_opd || c.use_opd; }

std::string opd_teacher_cluster(const PipelineConfig& c, size_t i) {
  return c.opd_teachers.size() == 1 ? "teacher" : "teacher-" + c.opd_teachers.at(i).first;
}

std::string opd_teacher_key(const PipelineConfig& c, size_t i) {
  return c.opd_teachers.size() == 1 ? "teacher" : "teacher." + c.opd_teachers.at(i).first;
}

const WorkerConfig* opd_teacher_of(const PipelineConfig& c, const std::string& cluster) {
  for (size_t i = 0; i < c.opd_teachers.size(); ++i)
    if (opd_teacher_cluster(c, i) == cluster) return &c.opd_teachers[i].second;
  return nullptr;
}

}  // namespace roll::config
