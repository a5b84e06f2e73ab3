// ROLL's DPO loss (roll/rl/dpo_loss.h): sigmoid, cDPO and IPO losses and the implicit rewards against an
// independent float64 numpy oracle (tests/oracles/dpo_loss.py, run with Debian's /usr/bin/python3), the
// gradient by hand, margins far past where exp overflows, input checks, and the values at the start of
// training, when the policy is still the reference.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle_util.h"
#include "roll/core/error.h"
#include "roll/rl/dpo_loss.h"

namespace roll::rl {
namespace {


// The four [pairs] vectors dpo_loss takes: summed response log-probs of each pair's chosen and rejected
// response under the policy and under the reference.
struct PairLogProbs {
  at::Tensor policy_chosen, policy_rejected, ref_chosen, ref_rejected;
};

DpoLoss dpo_loss_of(const PairLogProbs& p, const DpoLossOptions& options) {
  return dpo_loss(p.policy_chosen, p.policy_rejected, p.ref_chosen, p.ref_rejected, options);
}

// The margin DPO scores: h = (π_c − π_r) − (ref_c − ref_r), outside autograd.
at::Tensor margin_of(const PairLogProbs& p) {
  return ((p.policy_chosen - p.policy_rejected) - (p.ref_chosen - p.ref_rejected)).detach();
}

// ROLL's actor/acc: the fraction of pairs whose chosen reward is strictly above the rejected one.
double accuracy_of(const DpoLoss& r) {
  return (r.chosen_rewards > r.rejected_rewards).to(at::kDouble).mean().item<double>();
}

// Eight pairs of sequence log-probs as a model gives them (sums over a response, mostly in −80..−5, not
// dyadic, so float32 has rounding to do), with margins of both signs and sizes: two pairs whose
// far-apart responses (|log-prob| up to ~300) give |h| ≈ 285: even β = 0.1 puts β·h at ±28.6, where a
// naive log(sigmoid(x)) already loses ~3e-4 of its relative precision. Five of the eight margins are positive.
PairLogProbs fixed_pairs(at::ScalarType dtype) {
  // {policy_chosen, policy_rejected, ref_chosen, ref_rejected}
  const std::vector<std::array<double, 4>> pairs = {
      {-23.7, -31.2, -25.1, -29.8},        // h = 2.8
      {-45.3, -38.9, -44.0, -40.6},        // h = −3
      {-12.45, -60.8, -15.2, -55.35},      // h = 8.2
      {-70.1, -8.6, -66.4, -9.9},          // h = −5
      {-33.33, -33.33, -35.0, -31.0},      // h = 4: the policy cannot tell the two apart, the reference can
      {-5.2, -79.6, -5.9, -78.1},          // h = 2.2
      {-6.5, -290.25, -150.75, -148.5},    // h = 286
      {-287.4, -7.1, -149.3, -152.6},      // h = −283.6
  };
  std::array<std::vector<double>, 4> columns;
  for (const auto& pair : pairs)
    for (size_t k = 0; k < 4; ++k) columns[k].push_back(pair[k]);
  auto column = [&](size_t k) { return at::tensor(columns[k]).to(dtype); };  // at::tensor keeps double
  return {column(0), column(1), column(2), column(3)};
}

struct NamedOptions {
  const char* name;
  DpoLossOptions options;
};

// ROLL's default sigmoid loss, cDPO (label smoothing) and IPO.
const std::vector<NamedOptions> kOptionSets = {
    {"sigmoid", {.beta = 0.1, .label_smoothing = 0.0, .ipo = false}},
    {"cdpo", {.beta = 0.25, .label_smoothing = 0.1, .ipo = false}},
    {"ipo", {.beta = 0.1, .label_smoothing = 0.0, .ipo = true}},
};

std::vector<double> values_of(const at::Tensor& t) {
  const at::Tensor d = t.detach().to(at::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

// The oracle's {losses, chosen_rewards, rejected_rewards, loss, acc} for `pairs`; nullopt when Debian's
// python3 with numpy is not installed (the tests then skip). A float batch is sent as the doubles it
// actually holds, so only the arithmetic inside dpo_loss differs between the two sides.
std::optional<nlohmann::json> oracle(const PairLogProbs& pairs, const DpoLossOptions& options) {
  const nlohmann::json in = {
      {"policy_chosen", values_of(pairs.policy_chosen)}, {"policy_rejected", values_of(pairs.policy_rejected)},
      {"ref_chosen", values_of(pairs.ref_chosen)},       {"ref_rejected", values_of(pairs.ref_rejected)},
      {"beta", options.beta},                            {"label_smoothing", options.label_smoothing},
      {"ipo", options.ipo},
  };
  return roll::testing::run_oracle("dpo_loss.py", in);
}

// |got − want| ≤ atol + rtol·|want|, element by element.
void expect_near_oracle(const at::Tensor& got, const nlohmann::json& want, double rtol, double atol,
                        const std::string& what) {
  const std::vector<double> g = values_of(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = want[i].get<double>();
    EXPECT_NEAR(g[i], w, atol + rtol * std::abs(w)) << what << " [pair " << i << "]";
  }
}

// dpo_loss on fixed_pairs in `dtype` against the oracle, for each option set.
void expect_matches_oracle(at::ScalarType dtype, double rtol, double atol) {
  const PairLogProbs pairs = fixed_pairs(dtype);
  for (const auto& [name, options] : kOptionSets) {
    const std::optional<nlohmann::json> want = oracle(pairs, options);
    if (!want) GTEST_SKIP() << "/usr/bin/python3 with numpy (python3-numpy) is not installed";
    const DpoLoss got = dpo_loss_of(pairs, options);
    EXPECT_EQ(got.losses.scalar_type(), dtype) << name;
    expect_near_oracle(got.losses, (*want)["losses"], rtol, atol, std::string(name) + " losses");
    expect_near_oracle(got.chosen_rewards, (*want)["chosen_rewards"], rtol, atol, std::string(name) + " chosen");
    expect_near_oracle(got.rejected_rewards, (*want)["rejected_rewards"], rtol, atol,
                       std::string(name) + " rejected");
    const double mean_loss = (*want)["loss"].get<double>();
    EXPECT_NEAR(got.losses.mean().item<double>(), mean_loss, atol + rtol * std::abs(mean_loss)) << name;
    // Every |h| ≥ 2.2, so the chosen-minus-rejected reward β·h is nowhere near a tie in either precision.
    EXPECT_DOUBLE_EQ(accuracy_of(got), (*want)["acc"].get<double>()) << name;
    EXPECT_DOUBLE_EQ(accuracy_of(got), 5.0 / 8.0) << name;
  }
}

}  // namespace

// Both sides evaluate the same few float64 elementwise ops on the same inputs (h in the same order), and
// log-sigmoid is within a few ulp in ATen and in numpy's logaddexp; the mean sums only eight terms. So the
// results agree to a few ulp: rel 1e-12 leaves a wide margin, yet fails a log(sigmoid(x)) that loses 3e-4
// relative on the h = 286 pair's 3.8e-13 sigmoid loss.
TEST(RlDpoLossOracle, DoubleInputsMatchToRounding) { expect_matches_oracle(at::kDouble, 1e-12, 0.0); }

// float32 with log-probs up to |300| (ulp 3e-5 there): h is three float subtractions, off by at most
// ~6e-5, and by ~1.5e-5 on the pairs within −80..−5. The sigmoid losses move by ≤ β·δh ≤ 1.5e-5 and the
// rewards by about β·ulp, within the abs 1e-4. IPO's (h − 1/2β)² moves by 2|h − 1/2β|·δh: ≤ 1e-6 relative
// for the two far pairs, and 2x·1.5e-5 ≤ 1e-4 + 1e-5·x² holds for every x = |h − 1/2β| on the others.
TEST(RlDpoLossOracle, FloatInputsMatchToFloatRounding) { expect_matches_oracle(at::kFloat, 1e-5, 1e-4); }

// d mean(ℓ)/dπ_c = ℓ'(h)/P and d mean(ℓ)/dπ_r = −ℓ'(h)/P, with
//   sigmoid/cDPO: ℓ'(h) = −β·σ(−βh)·(1 − ε) + β·σ(βh)·ε,   IPO: ℓ'(h) = 2·(h − 1/2β);
// the rewards are detached, so they add nothing to it. Float64 throughout: a few ulp apart.
TEST(RlDpoLossGradient, MatchesTheDerivativeByHand) {
  for (const auto& [name, o] : kOptionSets) {
    PairLogProbs p = fixed_pairs(at::kDouble);
    p.policy_chosen.requires_grad_(true);
    p.policy_rejected.requires_grad_(true);
    const DpoLoss r = dpo_loss_of(p, o);
    EXPECT_TRUE(r.losses.requires_grad()) << name;
    EXPECT_FALSE(r.chosen_rewards.requires_grad()) << name;
    EXPECT_FALSE(r.rejected_rewards.requires_grad()) << name;
    r.losses.mean().backward();

    const at::Tensor h = margin_of(p);
    const double pairs = static_cast<double>(h.numel());
    const at::Tensor dloss_dh = o.ipo ? 2.0 * (h - 1.0 / (2.0 * o.beta))
                                      : -o.beta * at::sigmoid(-o.beta * h) * (1.0 - o.label_smoothing) +
                                            o.beta * at::sigmoid(o.beta * h) * o.label_smoothing;
    ASSERT_TRUE(p.policy_chosen.grad().defined()) << name;
    EXPECT_TRUE(at::allclose(p.policy_chosen.grad(), dloss_dh / pairs, 1e-12, 1e-15))
        << name << "\n" << p.policy_chosen.grad() << "\nwant\n" << dloss_dh / pairs;
    EXPECT_TRUE(at::allclose(p.policy_rejected.grad(), -dloss_dh / pairs, 1e-12, 1e-15))
        << name << "\n" << p.policy_rejected.grad() << "\nwant\n" << -dloss_dh / pairs;
  }
}

// β·h = ±1000, where exp(1000) overflows even in float64: the loss is a softplus of the margin, so cDPO
// (ε = 0.1) gives ε·1000 = 100 for the won pair and (1 − ε)·1000 = 900 for the lost one, with gradients
// β·ε/P and −β·(1 − ε)/P, finite in both precisions.
TEST(RlDpoLossStability, ExtremeMarginsStayFinite) {
  const DpoLossOptions o{.beta = 0.5, .label_smoothing = 0.1, .ipo = false};
  for (at::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const double rtol = dtype == at::kDouble ? 1e-12 : 1e-6;  // float: ~8 ulp, β and ε rounded to float
    PairLogProbs p{at::tensor({-5.0, -2005.0}).to(dtype), at::tensor({-2005.0, -5.0}).to(dtype),
                   at::full({2}, -50.0, at::dtype(dtype)), at::full({2}, -50.0, at::dtype(dtype))};
    p.policy_chosen.requires_grad_(true);
    const DpoLoss r = dpo_loss_of(p, o);
    r.losses.mean().backward();
    const std::vector<double> losses = values_of(r.losses), grad = values_of(p.policy_chosen.grad());
    EXPECT_NEAR(losses[0], 100.0, 100.0 * rtol) << dtype;
    EXPECT_NEAR(losses[1], 900.0, 900.0 * rtol) << dtype;
    EXPECT_NEAR(grad[0], 0.5 * 0.1 / 2, 0.025 * rtol) << dtype;
    EXPECT_NEAR(grad[1], -0.5 * 0.9 / 2, 0.225 * rtol) << dtype;
  }
}

TEST(RlDpoLossInputs, MismatchedShapesAndNonPositiveBetaAreRejected) {
  const at::Tensor four = at::zeros({4}, at::kDouble), three = at::zeros({3}, at::kDouble);
  EXPECT_THROW(dpo_loss(four, four, four, three, DpoLossOptions{}), Error);
  EXPECT_THROW(dpo_loss(three, four, four, four, DpoLossOptions{}), Error);
  const at::Tensor grid = at::zeros({2, 2}, at::kDouble);  // one [pairs] vector per input, not a batch of them
  EXPECT_THROW(dpo_loss(grid, grid, grid, grid, DpoLossOptions{}), Error);
  for (double beta : {0.0, -0.1, std::numeric_limits<double>::quiet_NaN()}) {
    DpoLossOptions o;
    o.beta = beta;
    EXPECT_THROW(dpo_loss(four, four, four, four, o), ConfigError) << beta;
  }
}

// Training starts with the policy equal to the reference, so h = 0 exactly: the sigmoid loss is log 2
// whatever the label smoothing (ROLL's first actor/loss ≈ 0.693), IPO's is (1/2β)², both rewards are 0
// and no pair is counted correct (the comparison is strict), so actor/acc starts at 0.
TEST(RlDpoLossStart, PolicyEqualToReferenceGivesLog2AndNoAccuracy) {
  const PairLogProbs ref = fixed_pairs(at::kDouble);
  const PairLogProbs start{ref.ref_chosen, ref.ref_rejected, ref.ref_chosen, ref.ref_rejected};
  for (const auto& [name, o] : kOptionSets) {
    const DpoLoss r = dpo_loss_of(start, o);
    const double want = o.ipo ? std::pow(1.0 / (2.0 * o.beta), 2) : std::log(2.0);
    for (double loss : values_of(r.losses)) EXPECT_NEAR(loss, want, 1e-15 * want) << name;
    EXPECT_TRUE(at::equal(r.chosen_rewards, at::zeros_like(r.chosen_rewards))) << name;
    EXPECT_TRUE(at::equal(r.rejected_rewards, at::zeros_like(r.rejected_rewards))) << name;
    EXPECT_EQ(accuracy_of(r), 0.0) << name;
  }
}

}  // namespace roll::rl
