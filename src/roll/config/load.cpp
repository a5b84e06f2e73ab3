#include "roll/config/load.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "roll/config/interpolate.h"
#include "roll/config/key_registry.h"
#include "roll/config/opd.h"
#include "roll/config/reader.h"

namespace roll::config {

const char* pipeline_kind_name(PipelineKind kind) {
  switch (kind) {
    case PipelineKind::rlvr: return "rlvr";
    case PipelineKind::agentic: return "agentic";
    case PipelineKind::sft: return "sft";
    case PipelineKind::dpo: return "dpo";
    case PipelineKind::distill: return "distill";
  }
  return "?";
}

PipelineKind detect_pipeline_kind(const NodePtr& root) {
  auto has = [&](const char* k) { return root->has(k); };
  if (has("sft_train")) return PipelineKind::sft;
  if (has("chosen_key") || has("rejected_key") || (has("beta") && has("ipo"))) return PipelineKind::dpo;
  if (is_pure_opd_tree(root)) {  // ROLL's OPD launcher: the RLVR pipeline unless pure_opd_pipeline_type says agentic
    NodePtr type = root->get("pure_opd_pipeline_type");
    return type && type->is_scalar() && type->text() == "agentic" ? PipelineKind::agentic : PipelineKind::rlvr;
  }
  if (has("distill_loss_weight") || has("kd_objective") || has("teacher_pretrain") || has("student"))
    return PipelineKind::distill;
  if (has("custom_envs") || has("train_env_manager") || has("val_env_manager")) return PipelineKind::agentic;
  return PipelineKind::rlvr;
}

LoadedConfig load_config(const LoadRequest& request) {
  LoadedConfig out;
  out.file = find_config_file(request.compose.config_path, request.compose.config_name);
  NodePtr composed = compose(request.compose);
  std::set<std::string> referenced;
  out.resolved = resolve(composed, {}, &referenced);
  out.composed = composed;
  out.platform = request.platform ? *request.platform : default_platform();

  Diagnostics diag;
  PipelineConfig& c = out.config;
  if (request.pure_opd) out.resolved->set("is_pure_opd", Node::scalar("true"));
  c.kind = request.kind ? *request.kind : detect_pipeline_kind(out.resolved);
  // On-policy distillation's roles become ROLL's RL roles before typing (config/opd.h).
  std::vector<OpdTeacherNode> teachers;
  Diagnostics opd_roles;
  if (c.kind == PipelineKind::rlvr || c.kind == PipelineKind::agentic)  // resolve() built the tree's maps afresh
    teachers = take_opd_roles(out.resolved, opd_roles, request.pure_opd);
  read_pipeline_config(out.resolved, c, diag);
  std::vector<IgnoredKeySet> ignored_in_teachers;
  for (const auto& t : teachers) {
    WorkerConfig w = c.teacher;
    if (t.key != "teacher") {  // one of several named teachers, taken out of the tree
      w = WorkerConfig{};
      read_worker_config(t.node, t.key, w, diag);
      for (auto& k : ignored_worker_keys_set(t.node, t.key)) ignored_in_teachers.push_back(std::move(k));
    }
    c.opd_teachers.emplace_back(t.name, std::move(w));
  }
  // A pure OPD config's problems name the roles as the user wrote them (student_train, not actor_train).
  const bool student_roles = c.is_pure_opd;
  if (student_roles) diag = with_student_roles(diag);
  for (const auto& e : opd_roles.errors()) diag.error(e.key, e.message);
  if (!c.exp_name) c.exp_name = std::filesystem::path(request.compose.config_name).stem().string();

  // One warning listing every key ROLL would drop silently (docs/design.md section 4, quirk 5). Keys that
  // an interpolation reads (`${max_actions_per_traj}`, `${deepspeed_zero3}`) are the config's
  // variables, and keys written only in included files are library definitions: neither is a typo.
  std::vector<Diagnostic> unknown;
  for (const auto& u : diag.unknown_keys()) {
    bool is_variable = false;
    for (const auto& r : referenced)
      if (r == u.key || r.rfind(u.key + ".", 0) == 0) is_variable = true;
    const bool from_command_line = u.message == SourceLoc{"", -1}.str();
    const bool from_include = !u.message.empty() && !from_command_line && u.message.rfind(out.file, 0) != 0;
    if (!is_variable && !from_include) unknown.push_back(u);
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& u : unknown) list += fmt::format("\n  {}{}", u.key, u.message.empty() ? "" : " (" + u.message + ")");
    out.warnings.push_back(
        {"", fmt::format("{} unknown key(s) ignored (ROLL drops them silently):{}", unknown.size(), list)});
  }
  // One warning listing every key the config sets that rollcpp accepts but does not act on
  // (key_registry.h). Unlike unknown keys, those written in included files count too: the value
  // is dropped wherever it was written, and the user should know.
  std::vector<IgnoredKeySet> ignored = ignored_keys_set(out.resolved);
  if (student_roles)
    for (auto& k : ignored) k.path = with_student_roles(k.path);
  ignored.insert(ignored.end(), ignored_in_teachers.begin(), ignored_in_teachers.end());
  if (!ignored.empty()) {
    std::string list;
    for (const auto& k : ignored)
      list += fmt::format("\n  {}{}: {}", k.path, k.where.empty() ? "" : " (" + k.where + ")", k.reason);
    out.warnings.push_back(
        {"", fmt::format("{} key(s) accepted and ignored (no effect in rollcpp):{}", ignored.size(), list)});
  }
  diag.throw_if_errors();  // type errors make derivation meaningless
  Diagnostics derived;
  derive_and_check(c, out.resolved, out.platform, request.devices_per_node, derived);
  if (student_roles) derived = with_student_roles(derived);
  for (const auto& w : derived.warnings()) out.warnings.push_back(w);
  for (const auto& e : derived.errors()) diag.error(e.key, e.message);
  diag.throw_if_errors();
  return out;
}

}  // namespace roll::config
