// On-policy distillation configs (config/opd.h): ROLL's student_train / student_infer / teacher
// layout, single and multi-teacher, the settings pure OPD fixes, the clusters it places, and the
// errors of its conflicts, each naming its key.
#include <gtest/gtest.h>

#include <algorithm>

#include "config_test_util.h"
#include "roll/config/opd.h"
#include "roll/config/placement.h"
#include "roll/pipeline/opd_scoring.h"
#include "roll/workers/role_config.h"

using namespace roll;
using namespace roll::config;
using roll::testing::error_of;
using roll::testing::load_in;
using roll::testing::TempConfigDir;

namespace {

// ROLL's qwen3-8B-onpolicy-distill-megatron layout, scaled to 4 CPU slots.
const char* kSingle = R"(exp_name: opd
num_gpus_per_node: 4
rollout_batch_size: 8
prompt_length: 64
response_length: 64
num_return_sequences_in_group: 2
adv_estimator: grpo
gamma: 1.0
use_kl_loss: true
pretrain: /nonexistent/student
student_train:
  model_args: {model_name_or_path: '${pretrain}'}
  data_args:
    file_name: data/x.jsonl
    domain_interleave_probs: {math_rule: 0.5, code_sandbox: 0.5}
    messages: messages
  training_args: {per_device_train_batch_size: 2, gradient_accumulation_steps: 2}
  strategy_args: {strategy_name: megatron_train, strategy_config: {pipeline_model_parallel_size: 2}}
  use_sequence_packing: true
  device_mapping: list(range(0,2))
student_infer:
  model_args: {model_name_or_path: '${pretrain}'}
  strategy_args: {strategy_name: vllm, strategy_config: {max_model_len: 256}}
  generating_args: {max_new_tokens: 5}
  device_mapping: list(range(2,4))
teacher:
  model_args: {model_name_or_path: /nonexistent/teacher}
  strategy_args: {strategy_name: megatron_infer}
  device_mapping: list(range(0,4))
  infer_batch_size: 1
rewards:
  math_rule:
    worker_cls: roll.pipeline.rlvr.rewards.math_rule_reward_worker.MathRuleRewardWorker
    tag_included: [math_dapo]
  code_sandbox:
    worker_cls: roll.pipeline.rlvr.rewards.code_sandbox_reward_worker.CodeSandboxRewardWorker
    tag_included: [KodCode]
)";

// The multi-teacher variant: `teacher` maps names to workers, routed by tag_included.
const char* kTeachers = R"(teacher:
  teacher_32B:
    model_args: {model_name_or_path: /nonexistent/t32}
    strategy_args: {strategy_name: megatron_infer}
    device_mapping: list(range(0,4))
    opd_kl_coef: 0.5
    tag_included: [math_dapo]
    sequence_packing_args: {algorithm: load_balance}
  teacher_14B:
    model_args: {model_name_or_path: /nonexistent/t14}
    strategy_args: {strategy_name: megatron_infer}
    device_mapping: list(range(2,4))
    tag_included: [KodCode]
)";

// kSingle with its `teacher` section replaced by `teacher_section`.
std::string with_teachers(const std::string& teacher_section) {
  std::string s = kSingle;
  const size_t begin = s.find("teacher:\n"), end = s.find("rewards:\n");
  return s.substr(0, begin) + teacher_section + s.substr(end);
}

std::vector<std::string> cluster_names(const LoadedConfig& l) {
  std::vector<std::string> out;
  for (const auto& c : make_placement_plan(l.config, l.platform).clusters)
    if (c.started) out.push_back(c.name);
  return out;
}

}  // namespace

TEST(ConfigOpd, PureOpdRunsTheStudentRolesAsTheActorsWithROLLsSettings) {
  TempConfigDir d;
  d.write("e/opd.yaml", kSingle);
  const LoadedConfig l = load_in(d, "e", "opd");
  const PipelineConfig& c = l.config;
  EXPECT_EQ(c.kind, PipelineKind::rlvr);
  EXPECT_TRUE(c.is_pure_opd);
  EXPECT_EQ(c.actor_train.model_args.model_name_or_path, std::optional<std::string>("/nonexistent/student"));
  EXPECT_EQ(c.actor_infer.device_mapping, (std::optional<std::vector<int>>{{2, 3}}));
  // Pure OPD learns from the teacher KL alone: ROLL fixes these whatever the file says.
  EXPECT_EQ(c.gamma, 0.0);
  EXPECT_EQ(c.adv_estimator, "reinforce");
  EXPECT_FALSE(c.use_kl_loss);
  EXPECT_FALSE(c.add_token_level_kl);
  EXPECT_TRUE(c.enable_reference);
  ASSERT_EQ(c.opd_teachers.size(), 1u);
  EXPECT_EQ(c.opd_teachers[0].first, "default");
  EXPECT_EQ(c.opd_teachers[0].second.opd_kl_coef, std::optional<double>(1.0));
  EXPECT_EQ(c.reference.model_args.model_name_or_path, std::optional<std::string>("/nonexistent/teacher"));
  const auto names = cluster_names(l);
  EXPECT_NE(std::find(names.begin(), names.end(), "teacher"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "reference"), names.end()) << "the teacher is the reference";
  EXPECT_EQ(&workers::worker_config_of(c, "teacher"), &c.opd_teachers[0].second);
}

TEST(ConfigOpd, NamedTeachersAreClustersOfTheirOwnWithTheirKeys) {
  TempConfigDir d;
  d.write("e/opd.yaml", with_teachers(kTeachers));
  const LoadedConfig l = load_in(d, "e", "opd");
  const PipelineConfig& c = l.config;
  ASSERT_EQ(c.opd_teachers.size(), 2u);
  EXPECT_EQ(c.opd_teachers[0].first, "teacher_32B");
  EXPECT_EQ(c.opd_teachers[0].second.opd_kl_coef, std::optional<double>(0.5));
  EXPECT_EQ(c.opd_teachers[1].second.opd_kl_coef, std::optional<double>(1.0));
  EXPECT_EQ(c.opd_teachers[1].second.tag_included, std::vector<std::string>{"KodCode"});
  EXPECT_EQ(opd_teacher_cluster(c, 1), "teacher-teacher_14B");
  EXPECT_EQ(opd_teacher_key(c, 1), "teacher.teacher_14B");
  const auto names = cluster_names(l);
  for (const char* n : {"teacher-teacher_32B", "teacher-teacher_14B"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_EQ(workers::worker_config_of(c, "teacher-teacher_14B").model_args.model_name_or_path,
            std::optional<std::string>("/nonexistent/t14"));
  // A key rollcpp does not act on, written inside a named teacher, is reported at its own path.
  bool named = false;
  for (const auto& w : l.warnings)
    named = named || w.message.find("teacher.teacher_32B.sequence_packing_args") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(ConfigOpd, TeachersScoreTheRowsOfTheDomainsTheirTagsRoute) {
  TempConfigDir d;
  std::string teachers = kTeachers;
  teachers += "  generalist:\n    model_args: {model_name_or_path: /nonexistent/g}\n    device_mapping: list(range(0,4))\n";
  d.write("e/opd.yaml", with_teachers(teachers));
  const PipelineConfig c = load_in(d, "e", "opd").config;
  const auto rows = pipeline::opd_teacher_rows(c, {"math_rule", "code_sandbox", "math_rule", "other"});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<int64_t>{0, 2}));  // math_dapo: the math_rule domain's tag
  EXPECT_EQ(rows[1], (std::vector<int64_t>{1}));     // KodCode
  EXPECT_EQ(rows[2], (std::vector<int64_t>{0, 1, 2, 3}));  // no tag_included: every row
}

TEST(ConfigOpd, MixedOpdKeepsTheRLSettingsAndTakesTheTeachersAsReference) {
  TempConfigDir d;
  std::string s = roll::testing::kRlvrConfig;
  s = s.substr(0, s.find("reference:\n")) + s.substr(s.find("rewards:\n"));
  s += "use_opd: true\nteacher:\n  model_args: {model_name_or_path: /nonexistent/t}\n  device_mapping: list(range(2,4))\n";
  d.write("e/mixed.yaml", s);
  const PipelineConfig c = load_in(d, "e", "mixed").config;
  EXPECT_FALSE(c.is_pure_opd);
  EXPECT_TRUE(c.use_opd);
  EXPECT_EQ(c.adv_estimator, "grpo");
  EXPECT_EQ(c.gamma, 1.0);
  EXPECT_TRUE(c.enable_reference);
  ASSERT_EQ(c.opd_teachers.size(), 1u);
}

TEST(ConfigOpd, ConflictsNameTheirKey) {
  TempConfigDir d;
  auto error_with = [&](const std::string& text, std::vector<std::string> overrides = {}) {
    d.write("e/bad.yaml", text);
    return error_of([&] { load_in(d, "e", "bad", std::move(overrides)); });
  };
  std::string actor_too = kSingle;
  actor_too += "actor_train: {device_mapping: list(range(0,2))}\n";
  EXPECT_NE(error_with(actor_too).find("actor_train"), std::string::npos);
  EXPECT_NE(error_with(kSingle, {"+use_opd=true"}).find("use_opd"), std::string::npos);
  EXPECT_NE(error_with(with_teachers("")).find("teacher"), std::string::npos);
  EXPECT_NE(error_with(kSingle, {"+pure_opd_pipeline_type=agentic"}).find("pure_opd_pipeline_type"),
            std::string::npos);
  EXPECT_NE(error_with(kSingle, {"+pure_opd_pipeline_type=agent"}).find("expected rlvr or agentic"), std::string::npos);
  EXPECT_NE(error_with(with_teachers(kTeachers), {"~teacher.teacher_14B.model_args"})
                .find("teacher.teacher_14B.model_args.model_name_or_path"),
            std::string::npos);
  // The student's own problems name the key the file wrote, not the role it runs as.
  const std::string batch = error_with(kSingle, {"student_train.training_args.per_device_train_batch_size=0"});
  EXPECT_NE(batch.find("student_train.training_args.per_device_train_batch_size"), std::string::npos) << batch;
  EXPECT_EQ(batch.find("actor_train"), std::string::npos) << batch;
  std::string mixed_with_reference = roll::testing::kRlvrConfig;
  mixed_with_reference += "use_opd: true\nteacher: {model_args: {model_name_or_path: /t}}\n";
  EXPECT_NE(error_with(mixed_with_reference).find("reference"), std::string::npos);
}
