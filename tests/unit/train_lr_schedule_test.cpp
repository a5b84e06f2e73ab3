// HF schedules (transformers.get_scheduler) at known points.
#include <gtest/gtest.h>

#include <cmath>

#include "roll/core/error.h"
#include "roll/train/lr_schedule.h"

using roll::train::LrSchedule;

TEST(TrainLrSchedule, LinearWithWarmup) {
  LrSchedule s("linear", 1.0, 10, 2, 0.0);
  const double want[] = {0.0, 0.5, 1.0, 7.0 / 8, 6.0 / 8, 5.0 / 8, 4.0 / 8, 3.0 / 8, 2.0 / 8, 1.0 / 8, 0.0, 0.0};
  for (int i = 0; i < 12; ++i) EXPECT_DOUBLE_EQ(s.multiplier(i), want[i]) << i;
}

TEST(TrainLrSchedule, CosineHalfWave) {
  LrSchedule s("cosine", 2e-6, 12, 2, 0.0);
  EXPECT_DOUBLE_EQ(s.multiplier(0), 0.0);
  EXPECT_DOUBLE_EQ(s.multiplier(1), 0.5);
  EXPECT_DOUBLE_EQ(s.multiplier(2), 1.0);
  EXPECT_NEAR(s.multiplier(7), 0.5, 1e-12);   // halfway through the decay
  EXPECT_NEAR(s.multiplier(12), 0.0, 1e-12);
  EXPECT_NEAR(s.multiplier(4), 0.5 * (1 + std::cos(M_PI * 0.2)), 1e-12);
  EXPECT_NEAR(s.lr(7), 1e-6, 1e-18);
}

TEST(TrainLrSchedule, ConstantAndConstantWithWarmup) {
  LrSchedule c("constant", 3.0, 5, 3, 0.0);
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(c.lr(i), 3.0);  // HF's constant ignores warmup
  LrSchedule w("constant_with_warmup", 1.0, 5, 4, 0.0);
  EXPECT_DOUBLE_EQ(w.multiplier(0), 0.0);
  EXPECT_DOUBLE_EQ(w.multiplier(1), 0.25);
  EXPECT_DOUBLE_EQ(w.multiplier(4), 1.0);
  EXPECT_DOUBLE_EQ(w.multiplier(100), 1.0);
}

TEST(TrainLrSchedule, WarmupRatioRoundsUpAndStepsWin) {
  EXPECT_EQ(LrSchedule("linear", 1, 10, 0, 0.25).warmup_steps(), 3);  // ceil(2.5)
  EXPECT_EQ(LrSchedule("linear", 1, 10, 4, 0.25).warmup_steps(), 4);
  EXPECT_EQ(LrSchedule("linear", 1, 10, 0, 0.0).warmup_steps(), 0);
  EXPECT_DOUBLE_EQ(LrSchedule("linear", 1, 10, 0, 0.0).multiplier(0), 1.0);  // no warmup: full LR at once
}

TEST(TrainLrSchedule, UnknownTypeIsAnErrorNamingIt) {
  try {
    LrSchedule("polynomial", 1, 10, 0, 0);
    FAIL();
  } catch (const roll::ConfigError& e) {
    EXPECT_EQ(e.key(), "lr_scheduler_type");
    EXPECT_NE(std::string(e.what()).find("polynomial"), std::string::npos);
  }
  EXPECT_THROW(LrSchedule("linear", 1, 10, 0, 1.5), roll::ConfigError);
}
