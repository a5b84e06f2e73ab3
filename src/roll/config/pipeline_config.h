#pragma once
// One pipeline's whole config: BaseConfig + PPOConfig + RLVRConfig + AgenticConfig + SFTConfig + DPOConfig +
// DistillConfig, as
// ROLL's dataclasses (docs/config.md). `kind` says which pipeline the file is for; keys of the other
// pipelines keep their defaults. Each part lists its keys once, in `visit`, which serves loading
// (reader.h), printing (`roll validate`) and the unknown-key check; fields that ROLL has but rollcpp
// does not act on are listed as `inert`, so they are accepted, and key_registry.h says for every key
// whether it is consumed or ignored (a config that sets an ignored key gets a warning naming it).
#include "roll/config/agentic_config.h"
#include "roll/config/base_config.h"
#include "roll/config/distill_config.h"
#include "roll/config/dpo_config.h"
#include "roll/config/ppo_config.h"
#include "roll/config/rlvr_config.h"
#include "roll/config/sft_config.h"

namespace roll::config {

enum class PipelineKind { rlvr, agentic, sft, dpo, distill };
const char* pipeline_kind_name(PipelineKind kind);

struct PipelineConfig : BaseConfig, PPOConfig, RLVRConfig, AgenticConfig, SFTConfig, DPOConfig, DistillConfig {
  PipelineKind kind = PipelineKind::rlvr;

  template <typename V>
  void visit(V& v) {  // in this order: `roll validate` prints the keys so
    BaseConfig::visit(v);
    PPOConfig::visit(v);
    RLVRConfig::visit(v);
    AgenticConfig::visit(v);
    SFTConfig::visit(v);
    DPOConfig::visit(v);
    DistillConfig::visit(v);
  }
};

// LoRA (actor_train.model_args.lora_target) as ROLL runs it: no reference cluster is started; the
// reference log-probs come from actor_train with its adapters disabled (the frozen base). Not in
// on-policy distillation, whose reference is the teacher.
inline bool reference_from_actor(const PipelineConfig& c) {
  return c.enable_reference && c.actor_train.model_args.lora_target.has_value() && c.opd_teachers.empty();
}

}  // namespace roll::config
