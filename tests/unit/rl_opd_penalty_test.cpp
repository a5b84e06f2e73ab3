// On-policy distillation (roll/rl/opd_penalty.h, roll/rl/advantage.h): the per-token penalty
// Σ_i coef_i · KL(student, teacher_i) on the rows routed to each teacher, and the pure and mixed OPD advantages
// built from it, against an independent float64 numpy oracle (tests/oracles/opd_penalty.py, run with Debian's
// /usr/bin/python3) that indexes each teacher's rows out of the batch as ROLL does, where rollcpp multiplies by a
// row mask. Also: a teacher's log-probs off its rows are never read, and a malformed row mask is refused.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle_util.h"
#include "roll/core/error.h"
#include "roll/rl/advantage.h"
#include "roll/rl/estimator.h"
#include "roll/rl/kl.h"
#include "roll/rl/opd_penalty.h"

namespace roll::rl {
namespace {

using Grid = std::vector<std::vector<double>>;

constexpr int64_t kB = 5, kT = 7;
// What a teacher's log-probs hold on rows it does not score: a value far from any real log-prob, so a penalty
// that read it would be off by tens (and k3 would sit at its clamp).
constexpr double kGarbage = -50.0;
const std::vector<double> kUnscored(kT, kGarbage);

const std::vector<KlType> kKlTypes = {KlType::kl, KlType::abs, KlType::mse, KlType::k3};

at::Tensor float_grid(const Grid& g) {
  std::vector<double> flat;
  for (const auto& row : g) flat.insert(flat.end(), row.begin(), row.end());
  return at::tensor(flat).reshape({static_cast<int64_t>(g.size()), kT}).to(at::kFloat);
}

at::Tensor bool_rows(const std::vector<int64_t>& rows01) { return at::tensor(rows01).to(at::kBool); }

// A batch of five responses of seven tokens, with the four teachers OPD routing can give it: A scores every row,
// B rows {0, 2} (overlapping A), C rows {1, 4} (disjoint from B), D no row at all. Log-probs are not dyadic, so
// float32 has rounding to do; k3's argument (teacher − student) stays below 1.4 except at row 0, token 6, where
// A's 3.55 puts k3 at its clamp of 10 (e^3.55 − 4.55 ≈ 30), and no argument is near the clamp's edge (≈ 2.61).
struct OpdBatch {
  at::Tensor student, mask, rewards;
  std::vector<OpdTeacherScores> teachers;
};

OpdBatch fixed_batch() {
  OpdBatch b;
  b.student = float_grid({{-0.12, -1.35, -0.48, -2.71, -0.05, -0.93, -4.00},
                          {-0.66, -0.21, -3.10, -0.87, -1.52, -0.30, -0.75},
                          {-2.05, -0.40, -0.99, -1.20, -0.15, -2.60, -0.33},
                          {-0.58, -1.11, -0.27, -0.72, -1.94, -0.45, -0.81},
                          {-0.36, -1.78, -0.09, -2.24, -0.61, -1.05, -0.50}});
  // Responses of 7, 5, 3, 0 and 6 tokens: padding at row ends and one row with no token at all. The padded
  // positions hold ordinary log-probs, so only the mask keeps them out of the penalty.
  b.mask = float_grid({{1, 1, 1, 1, 1, 1, 1},
                       {1, 1, 1, 1, 1, 0, 0},
                       {1, 1, 1, 0, 0, 0, 0},
                       {0, 0, 0, 0, 0, 0, 0},
                       {1, 1, 1, 1, 1, 1, 0}});
  // An outcome reward at the last token, a dense one on row 2, and two on padding (row 1, token 6; row 3) that
  // the mask must drop before the discounted return.
  b.rewards = float_grid({{0, 0, 0, 0, 0, 0, 1.0},
                          {0, 0, 0, 0, -0.5, 0, 0.7},
                          {0, 0.25, 1.0, 0, 0, 0, 0},
                          {0, 0, 0, 0.9, 0, 0, 0},
                          {0, 0, 0, 0, 0, 0.6, 0}});
  const at::Tensor a = float_grid({{-0.30, -0.95, -0.52, -1.40, -0.11, -1.62, -0.45},
                                   {-0.41, -0.64, -2.20, -0.90, -1.05, -0.70, -0.20},
                                   {-1.75, -0.58, -1.46, -0.83, -0.37, -2.15, -0.90},
                                   {-0.80, -0.95, -0.60, -0.50, -1.20, -0.40, -1.00},
                                   {-0.52, -1.30, -0.25, -2.90, -0.44, -0.88, -0.70}});
  const at::Tensor bt = float_grid({{-0.20, -1.10, -0.75, -2.10, -0.02, -0.60, -3.20},
                                    kUnscored,
                                    {-2.40, -0.25, -0.70, -1.60, -0.09, -3.05, -0.10},
                                    kUnscored,
                                    kUnscored});
  const at::Tensor c = float_grid({kUnscored,
                                   {-1.00, -0.15, -2.75, -1.30, -1.60, -0.10, -0.95},
                                   kUnscored,
                                   kUnscored,
                                   {-0.30, -2.10, -0.19, -1.85, -0.95, -1.40, -0.15}});
  const at::Tensor d = at::full({kB, kT}, kGarbage, at::kFloat);
  b.teachers = {{a, bool_rows({1, 1, 1, 1, 1}), 0.5},
                {bt, bool_rows({1, 0, 1, 0, 0}), 1.5},
                {c, bool_rows({0, 1, 0, 0, 1}), 0.8},
                {d, bool_rows({0, 0, 0, 0, 0}), 3.0}};
  return b;
}

// A [B, T] tensor as the doubles it holds: a float batch goes to the oracle exactly as rollcpp sees it, so only
// the arithmetic differs between the two sides.
Grid grid_of(const at::Tensor& t) {
  const at::Tensor d = t.detach().to(at::kDouble).contiguous();
  Grid g(d.size(0));
  for (int64_t i = 0; i < d.size(0); ++i) g[i].assign(d[i].data_ptr<double>(), d[i].data_ptr<double>() + d.size(1));
  return g;
}

std::vector<bool> bools_of(const at::Tensor& rows) {
  const at::Tensor r = rows.to(at::kBool).contiguous();
  return std::vector<bool>(r.data_ptr<bool>(), r.data_ptr<bool>() + r.numel());  // braces would make two bools
}

// The oracle's {penalty, pure_advantages, mixed_advantages, mixed_raw_advantages}; nullopt when Debian's python3
// with numpy is not installed (the tests then skip).
std::optional<nlohmann::json> oracle(const OpdBatch& batch, KlType type, double gamma, bool whiten) {
  nlohmann::json teachers = nlohmann::json::array();
  for (const auto& t : batch.teachers) {
    const nlohmann::json teacher = {
        {"log_probs", grid_of(t.log_probs)}, {"rows", bools_of(t.rows)}, {"kl_coef", t.kl_coef}};
    teachers.push_back(teacher);
  }
  const nlohmann::json in = {
      {"student", grid_of(batch.student)},
      {"mask", grid_of(batch.mask)},
      {"teachers", teachers},
      {"kl_penalty", std::string(to_string(type))},
      {"token_level_rewards", grid_of(batch.rewards)},
      {"gamma", gamma},
      {"whiten_advantages", whiten},
  };
  return roll::testing::run_oracle("opd_penalty.py", in);
}

constexpr const char* kNoOracle = "/usr/bin/python3 with numpy (python3-numpy) is not installed";

// |got − want| ≤ atol + rtol·|want|, element by element over [B, T].
void expect_near_oracle(const at::Tensor& got, const nlohmann::json& want, double rtol, double atol,
                        const std::string& what) {
  ASSERT_EQ(got.dim(), 2) << what;
  const Grid g = grid_of(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t b = 0; b < g.size(); ++b) {
    ASSERT_EQ(g[b].size(), want[b].size()) << what << " [row " << b << "]";
    for (size_t t = 0; t < g[b].size(); ++t) {
      const double w = want[b][t].get<double>();
      EXPECT_NEAR(g[b][t], w, atol + rtol * std::abs(w)) << what << " [" << b << ", " << t << "]";
    }
  }
}

// Tolerances. The inputs are float32 and the oracle gets the very same values, so the gap is float32 arithmetic
// alone: a few roundings per token of values up to ~6 (the clamped k3 token), i.e. ~1e-6 absolute, and the
// discounted return adds at most seven float32 sums. rtol/atol 1e-5 leave a tenfold margin, yet catch a teacher
// read off its rows (an error of tens) or a padded token let in (most would add 1e-2 or more).
constexpr double kRtol = 1e-5, kAtol = 1e-5;
// Whitening divides by the masked std of the advantages (0.6–1.3 on this batch) after float32 reductions over the
// 21 masked tokens, so errors grow a few-fold; 1e-4 absolute still sits far below any real mistake (a biased
// variance alone would move values by ~2.4%).
constexpr double kWhitenedAtol = 1e-4;

AdvantageParams reinforce_params(double gamma, bool whiten) {
  AdvantageParams p;
  p.estimator = AdvEstimator::reinforce;
  p.gamma = gamma;
  p.whiten_advantages = whiten;
  return p;
}

std::string label(KlType type, double gamma, bool whiten) {
  return std::string(to_string(type)) + " gamma " + std::to_string(gamma) + (whiten ? " whitened" : "");
}

bool all_finite(const at::Tensor& t) { return at::isfinite(t).all().item<bool>(); }

// Equal value for value (−0 and +0 alike), with no NaN on either side.
bool same_values(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && all_finite(a) && all_finite(b) && (a == b).all().item<bool>();
}

}  // namespace

TEST(RlOpdPenaltyOracle, PenaltyMatchesForEveryKlType) {
  const OpdBatch batch = fixed_batch();
  for (KlType type : kKlTypes) {
    const std::optional<nlohmann::json> want = oracle(batch, type, 1.0, false);
    if (!want) GTEST_SKIP() << kNoOracle;
    const at::Tensor got = opd_kl_penalty(batch.student, batch.teachers, batch.mask, type);
    EXPECT_EQ(got.scalar_type(), at::kFloat) << to_string(type);
    expect_near_oracle(got, (*want)["penalty"], kRtol, kAtol, std::string(to_string(type)) + " penalty");
  }
}

// Pure OPD: the rewards are ignored; advantages and returns are −penalty, then whitened (advantages only) and
// masked. The penalty fed in is rollcpp's own, as the pipeline does, so the chain is checked end to end.
TEST(RlOpdPenaltyOracle, PureOpdAdvantagesMatch) {
  const OpdBatch batch = fixed_batch();
  for (KlType type : kKlTypes) {
    for (bool whiten : {false, true}) {
      const std::optional<nlohmann::json> want = oracle(batch, type, 1.0, whiten);
      if (!want) GTEST_SKIP() << kNoOracle;
      AdvantageInputs in;
      in.token_level_rewards = batch.rewards;
      in.mask = batch.mask;
      in.opd_penalty = opd_kl_penalty(batch.student, batch.teachers, batch.mask, type);
      in.pure_opd = true;
      const AdvantageResult r = compute_advantage(in, reinforce_params(1.0, whiten));
      const std::string what = label(type, 1.0, whiten) + " pure";
      EXPECT_FALSE(r.whitening_skipped) << what;
      expect_near_oracle(r.advantages, (*want)["pure_advantages"], kRtol, whiten ? kWhitenedAtol : kAtol,
                         what + " advantages");
      // returns and raw_advantages are −penalty as it stands before whitening.
      const at::Tensor minus_penalty = -float_grid((*want)["penalty"].get<Grid>());
      expect_near_oracle(r.returns, nlohmann::json(grid_of(minus_penalty)), kRtol, kAtol, what + " returns");
      expect_near_oracle(r.raw_advantages, nlohmann::json(grid_of(minus_penalty)), kRtol, kAtol, what + " raw");
    }
  }
}

// Mixed OPD (use_opd without pure_opd): the reinforce return of the masked rewards, less the penalty, then
// whitened and masked. raw_advantages and returns stay the return itself: OPD moves the advantages only.
TEST(RlOpdPenaltyOracle, MixedOpdAdvantagesMatch) {
  const OpdBatch batch = fixed_batch();
  for (KlType type : kKlTypes) {
    for (double gamma : {0.9, 1.0}) {
      for (bool whiten : {false, true}) {
        const std::optional<nlohmann::json> want = oracle(batch, type, gamma, whiten);
        if (!want) GTEST_SKIP() << kNoOracle;
        AdvantageInputs in;
        in.token_level_rewards = batch.rewards;
        in.mask = batch.mask;
        in.opd_penalty = opd_kl_penalty(batch.student, batch.teachers, batch.mask, type);
        const AdvantageResult r = compute_advantage(in, reinforce_params(gamma, whiten));
        const std::string what = label(type, gamma, whiten) + " mixed";
        EXPECT_FALSE(r.whitening_skipped) << what;
        expect_near_oracle(r.advantages, (*want)["mixed_advantages"], kRtol, whiten ? kWhitenedAtol : kAtol,
                           what + " advantages");
        expect_near_oracle(r.raw_advantages, (*want)["mixed_raw_advantages"], kRtol, kAtol, what + " raw");
        expect_near_oracle(r.returns, (*want)["mixed_raw_advantages"], kRtol, kAtol, what + " returns");
      }
    }
  }
}

// The row mask says which rows a teacher scored; one that is not [B] cannot be lined up with the batch.
TEST(RlOpdPenaltyInputs, TeacherRowMaskOfTheWrongShapeIsRejected) {
  const OpdBatch batch = fixed_batch();
  const OpdTeacherScores& a = batch.teachers[0];
  for (const at::Tensor& rows : {at::ones({kB - 1}, at::kBool), at::ones({kB + 1}, at::kBool),
                                 at::ones({kB, 1}, at::kBool), at::scalar_tensor(true, at::kBool)}) {
    const std::vector<OpdTeacherScores> teachers = {a, {a.log_probs, rows, a.kl_coef}};
    EXPECT_THROW(opd_kl_penalty(batch.student, teachers, batch.mask, KlType::kl), Error) << rows.sizes();
  }
  // The teacher's log-probs must match the student's [B, T] as well.
  const std::vector<OpdTeacherScores> short_teacher = {{a.log_probs.narrow(1, 0, kT - 1), a.rows, a.kl_coef}};
  EXPECT_THROW(opd_kl_penalty(batch.student, short_teacher, batch.mask, KlType::kl), Error);
}

// A teacher no row is routed to adds exactly nothing, whatever its log-probs hold: −50 (k3 of it would be at its
// clamp), NaN or ±inf (which a 0 mask cannot cancel: NaN·0 and inf·0 are NaN).
TEST(RlOpdPenaltyRouting, TeacherScoringNoRowsAddsNothing) {
  const OpdBatch batch = fixed_batch();
  const std::vector<OpdTeacherScores> scoring(batch.teachers.begin(), batch.teachers.begin() + 3);
  for (KlType type : kKlTypes) {
    const at::Tensor want = opd_kl_penalty(batch.student, scoring, batch.mask, type);
    for (double garbage : {kGarbage, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
      const OpdTeacherScores idle{at::full({kB, kT}, garbage, at::kFloat), bool_rows({0, 0, 0, 0, 0}), 3.0};
      std::vector<OpdTeacherScores> with_idle = scoring;
      with_idle.push_back(idle);
      const at::Tensor got = opd_kl_penalty(batch.student, with_idle, batch.mask, type);
      EXPECT_TRUE(same_values(got, want)) << to_string(type) << " garbage " << garbage << "\n" << got;
      const at::Tensor alone = opd_kl_penalty(batch.student, {idle}, batch.mask, type);
      EXPECT_TRUE(same_values(alone, at::zeros({kB, kT}, at::kFloat)))
          << to_string(type) << " garbage " << garbage << "\n" << alone;
    }
  }
}

// Likewise a scoring teacher's log-probs on the rows it does not score: B's and C's −50s swapped for NaN and inf
// leave the penalty as it was.
TEST(RlOpdPenaltyRouting, TeacherLogProbsOffItsRowsAreNeverRead) {
  const OpdBatch batch = fixed_batch();
  OpdBatch poisoned = batch;
  poisoned.teachers[1].log_probs =
      at::where(batch.teachers[1].rows.unsqueeze(1), batch.teachers[1].log_probs,
                at::full({kB, kT}, std::numeric_limits<double>::quiet_NaN(), at::kFloat));
  poisoned.teachers[2].log_probs =
      at::where(batch.teachers[2].rows.unsqueeze(1), batch.teachers[2].log_probs,
                at::full({kB, kT}, std::numeric_limits<double>::infinity(), at::kFloat));
  for (KlType type : kKlTypes) {
    const at::Tensor want = opd_kl_penalty(batch.student, batch.teachers, batch.mask, type);
    const at::Tensor got = opd_kl_penalty(poisoned.student, poisoned.teachers, poisoned.mask, type);
    EXPECT_TRUE(same_values(got, want)) << to_string(type) << "\n" << got << "\nwant\n" << want;
  }
}

}  // namespace roll::rl

namespace roll::rl {

// Each teacher's mean KL: one teacher's penalty over its coefficient, averaged over the masked tokens
// of its rows; 0 for a teacher that scores no row.
TEST(RlOpdPenaltyRouting, KlMeansAreEachTeachersOwnAverage) {
  const OpdBatch batch = fixed_batch();
  for (KlType type : kKlTypes) {
    std::vector<double> means;
    opd_kl_penalty(batch.student, batch.teachers, batch.mask, type, &means);
    ASSERT_EQ(means.size(), batch.teachers.size());
    for (size_t i = 0; i < batch.teachers.size(); ++i) {
      const OpdTeacherScores& t = batch.teachers[i];
      const at::Tensor alone = opd_kl_penalty(batch.student, {t}, batch.mask, type) / t.kl_coef;
      const double tokens = (batch.mask * t.rows.to(at::kFloat).unsqueeze(1)).sum().item<double>();
      const double want = tokens > 0 ? alone.sum().item<double>() / tokens : 0.0;
      EXPECT_NEAR(means[i], want, 1e-5 * std::max(1.0, std::abs(want))) << to_string(type) << " teacher " << i;
    }
  }
}

}  // namespace roll::rl
