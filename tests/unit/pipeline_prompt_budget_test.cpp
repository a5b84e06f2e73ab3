// PromptBudget (ROLL's ReplayBuffer poll/commit/abort, docs/pipelines.md): regular slots up to batch_size
// minus completed, extra slots only with is_use_additional_prompts and counted on their own
// (quirk 10 fixed), aborts free a slot without completing.
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/pipeline/data/prompt_budget.h"

namespace roll::pipeline {
namespace {

TEST(PipelinePromptBudget, RegularSlotsUpToBatchSize) {
  PromptBudget b(3, false, 16);
  EXPECT_EQ(b.poll(), PromptSlot::regular);
  EXPECT_EQ(b.poll(), PromptSlot::regular);
  EXPECT_EQ(b.poll(), PromptSlot::regular);
  EXPECT_EQ(b.poll(), PromptSlot::none);  // running + completed == 3, no additional prompts
  b.abort(PromptSlot::regular);            // filtered out: its slot goes to a replacement
  EXPECT_EQ(b.running(), 2);
  EXPECT_EQ(b.completed(), 0);
  EXPECT_EQ(b.poll(), PromptSlot::regular);
  b.commit(PromptSlot::regular);
  EXPECT_EQ(b.completed(), 1);
  EXPECT_EQ(b.poll(), PromptSlot::none);  // 2 running + 1 completed
  b.commit(PromptSlot::regular);
  b.commit(PromptSlot::regular);
  EXPECT_EQ(b.completed(), 3);
  EXPECT_EQ(b.running(), 0);
  EXPECT_EQ(b.poll(), PromptSlot::none);  // the step's budget is used up
}

TEST(PipelinePromptBudget, ExtraSlotsCountOnlyExtraPrompts) {
  // ROLL (quirk 10) would allow 4 - 4 = 0 extras while 4 regular prompts run; here 2 of them.
  PromptBudget b(4, true, 2);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b.poll(), PromptSlot::regular);
  EXPECT_EQ(b.poll(), PromptSlot::extra);
  EXPECT_EQ(b.poll(), PromptSlot::extra);
  EXPECT_EQ(b.poll(), PromptSlot::none);
  EXPECT_EQ(b.running_extra(), 2);
  b.commit(PromptSlot::extra);  // an extra's commit frees the extra slot and completes nothing
  EXPECT_EQ(b.completed(), 0);
  EXPECT_EQ(b.running_extra(), 1);
  EXPECT_EQ(b.poll(), PromptSlot::extra);
  b.abort(PromptSlot::regular);
  EXPECT_EQ(b.poll(), PromptSlot::regular);  // regular slots come first
}

TEST(PipelinePromptBudget, ReleasingWhatNeverStartedIsAnError) {
  PromptBudget b(2, false, 16);
  EXPECT_THROW(b.commit(PromptSlot::regular), Error);
  EXPECT_THROW(b.abort(PromptSlot::extra), Error);
  EXPECT_EQ(b.poll(), PromptSlot::regular);
  EXPECT_THROW(b.commit(PromptSlot::none), Error);
  EXPECT_THROW(PromptBudget(2, true, -1), ConfigError);
  PromptBudget zero(0, false, 16);
  EXPECT_EQ(zero.poll(), PromptSlot::none);
}

}  // namespace
}  // namespace roll::pipeline
