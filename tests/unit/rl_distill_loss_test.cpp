// The loss maths of ROLL's logit distillation (roll/rl/distill_loss.h): the teacher's top-k log-probs and
// the six per-token divergences against an independent float64 numpy oracle (tests/oracles/distill_loss.py,
// run with Debian's /usr/bin/python3), with k = 4 and the whole vocabulary, two temperatures ≠ 1 and -inf
// logits; the gradient (the student's only) against the oracle's central differences; zero divergence
// when the student is the teacher; and the input checks.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle_util.h"
#include "roll/core/error.h"
#include "roll/rl/distill_loss.h"

namespace roll::rl {
namespace {


constexpr int64_t kBatch = 2, kTokens = 3, kVocab = 11;
constexpr double kKdTemperature = 1.5, kTeacherTemperature = 0.8;  // ROLL's kd_/teacher_temperature
constexpr double kAlpha = 0.5;                                     // adaptive_kl_alpha (ROLL's default)
constexpr double kLambda = 0.3;                                    // skew_lambda
constexpr double kNumTokens = 5.0;                                 // label_mask below keeps 5 of the 6 tokens
const double kInf = std::numeric_limits<double>::infinity();

const std::vector<std::string> kObjectives = {"forward_kl",        "reverse_kl",        "adaptive_kl",
                                              "skewed_forward_kl", "skewed_reverse_kl", "js_divergence"};

int64_t at_index(int64_t b, int64_t t, int64_t v) { return (b * kTokens + t) * kVocab + v; }

struct Logits {
  at::Tensor teacher, student;  // [B, T, V]
};

// A [2, 3, 11] teacher and a student that half follows it, smooth non-dyadic values in about ±3.4 (so float
// has rounding to do). The scaled teacher logits' 4th and 5th largest are ≥ 0.026 apart in every token, so
// top-4 picks the same ids in float and in double. The teacher's logit 6 in token (1,1) is −26: with k = 0
// it keeps p ≈ 3e-11 there, below js_divergence's ε = 1e-9, where the ε moves the value by ≈ 4e-10 (for p
// and q well above ε its first-order effects cancel, as (p + q)/m = 2). Besides, three sets of infinities:
//   token (0,1): the teacher's logit 5 is -inf (a vocabulary entry it rules out); it is never in a top-4,
//                and with k = 0 p = 0 there while q > 0: the entry drops out of the sums.
//   token (0,2): the student's logit 4 is -inf and the teacher has it in its top-4 (a token the student
//                bans): the entry drops out, which here makes the k = 4 forward KL negative, as in ROLL.
//   token (1,2): both are -inf on ids 3..10 (a padded vocabulary): only three finite teacher logits, so
//                top-4 keeps one -inf, and which of the eight tied ids it picks does not matter since the
//                student is -inf on all of them.
Logits fixed_logits(at::ScalarType dtype) {
  std::vector<double> teacher(kBatch * kTokens * kVocab), student(teacher.size());
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t t = 0; t < kTokens; ++t)
      for (int64_t v = 0; v < kVocab; ++v) {
        const double x =
            2.6 * std::sin(1.37 * v + 0.91 * t + 2.3 * b + 0.4) + 0.8 * std::cos(2.9 * v - 1.3 * t + 0.5 * b);
        teacher[at_index(b, t, v)] = x;
        student[at_index(b, t, v)] = 0.7 * x + 1.2 * std::sin(0.83 * v + 1.9 * t - 0.6 * b + 1.1);
      }
  teacher[at_index(1, 1, 6)] = -26.0;
  teacher[at_index(0, 1, 5)] = -kInf;
  student[at_index(0, 2, 4)] = -kInf;
  for (int64_t v = 3; v < kVocab; ++v) teacher[at_index(1, 2, v)] = student[at_index(1, 2, v)] = -kInf;
  auto tensor = [&](const std::vector<double>& x) {
    return at::tensor(x).reshape({kBatch, kTokens, kVocab}).to(dtype);  // at::tensor keeps double
  };
  return {tensor(teacher), tensor(student)};
}

// Token (1,0) is padding.
at::Tensor label_mask() {
  return at::tensor(std::vector<int64_t>{1, 1, 1, 0, 1, 1}).reshape({kBatch, kTokens}).to(at::kBool);
}

std::vector<double> values_of(const at::Tensor& t) {
  const at::Tensor d = t.detach().to(at::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

// JSON has no literal for ±inf or NaN: they travel as the strings "inf", "-inf", "nan" (the oracle's too).
nlohmann::json numbers_json(const at::Tensor& t) {
  nlohmann::json out = nlohmann::json::array();
  for (double x : values_of(t)) {
    if (std::isfinite(x))
      out.push_back(x);
    else
      out.push_back(std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
  }
  return out;
}

double number_of(const nlohmann::json& j) {
  return j.is_string() ? std::strtod(j.get<std::string>().c_str(), nullptr) : j.get<double>();
}

// The oracle's answer for `logits`, top-`k` and the temperatures above: the teacher's kept log-probs, ids
// and inf mask, every objective's per-token divergence and token mean, and with `grad` the token mean's
// gradient in the student logits. nullopt when Debian's python3 with numpy is missing (the tests then skip).
// A float batch is sent as the doubles it holds, so only the arithmetic differs between the two sides.
std::optional<nlohmann::json> oracle(const Logits& logits, int64_t k, double teacher_temperature, bool grad) {
  const nlohmann::json in = {
      {"shape", {kBatch, kTokens, kVocab}},
      {"teacher_logits", numbers_json(logits.teacher)},
      {"student_logits", numbers_json(logits.student)},
      {"k", k},
      {"kd_temperature", kKdTemperature},
      {"teacher_temperature", teacher_temperature},
      {"adaptive_kl_alpha", kAlpha},
      {"skew_lambda", kLambda},
      {"label_mask", numbers_json(label_mask())},
      {"num_tokens", kNumTokens},
      {"objectives", kObjectives},
      {"grad", grad},
  };
  return roll::testing::run_oracle("distill_loss.py", in);
}

#define SKIP_WITHOUT_NUMPY(want) \
  if (!(want)) GTEST_SKIP() << "/usr/bin/python3 with numpy (python3-numpy) is not installed"

// |got − want| ≤ atol + rtol·|want| element by element; an infinite `want` must be met exactly.
void expect_near_oracle(const at::Tensor& got, const nlohmann::json& want, double rtol, double atol,
                        const std::string& what) {
  const std::vector<double> g = values_of(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = number_of(want[i]);
    if (std::isinf(w))
      EXPECT_EQ(g[i], w) << what << " [" << i << "]";
    else
      EXPECT_NEAR(g[i], w, atol + rtol * std::abs(w)) << what << " [" << i << "]";
  }
}

// teacher_topk and every objective's divergence and token mean on fixed_logits in `dtype`, k = 4 and k = 0,
// against the oracle.
void expect_matches_oracle(at::ScalarType dtype, double rtol, double atol) {
  const Logits logits = fixed_logits(dtype);
  for (int64_t k : {int64_t{4}, int64_t{0}}) {
    const std::optional<nlohmann::json> want = oracle(logits, k, kTeacherTemperature, /*grad=*/false);
    SKIP_WITHOUT_NUMPY(want);
    const std::string at_k = "k = " + std::to_string(k);
    const TeacherTopK teacher = teacher_topk(logits.teacher, k, kKdTemperature, kTeacherTemperature);
    const int64_t kept = k > 0 ? k : kVocab;
    EXPECT_EQ(teacher.log_probs.sizes().vec(), (std::vector<int64_t>{kBatch, kTokens, kept})) << at_k;
    EXPECT_EQ(teacher.log_probs.scalar_type(), dtype) << at_k;
    expect_near_oracle(teacher.log_probs, (*want)["teacher_log_probs"], rtol, atol, at_k + " teacher log_probs");
    const std::vector<double> inf_mask = values_of(teacher.inf_mask);
    const auto& want_mask = (*want)["teacher_inf_mask"];
    ASSERT_EQ(inf_mask.size(), want_mask.size()) << at_k;
    for (size_t i = 0; i < inf_mask.size(); ++i)
      EXPECT_EQ(inf_mask[i] != 0, want_mask[i].get<bool>()) << at_k << " inf_mask [" << i << "]";
    if (k == 0) {
      EXPECT_FALSE(teacher.indices.defined());  // the whole vocabulary, in order
    } else {
      ASSERT_TRUE(teacher.indices.defined());
      EXPECT_EQ(teacher.indices.scalar_type(), at::kLong);
      const std::vector<double> ids = values_of(teacher.indices);
      const auto& want_ids = (*want)["teacher_indices"];
      ASSERT_EQ(ids.size(), want_ids.size());
      for (size_t i = 0; i < ids.size(); ++i) {  // a kept -inf is one of several tied ids: either is right
        if (!want_mask[i].get<bool>()) {
          EXPECT_EQ(ids[i], want_ids[i].get<double>()) << at_k << " id [" << i << "]";
        }
      }
    }

    for (const std::string& objective : kObjectives) {
      const std::string what = at_k + " " + objective;
      const at::Tensor div = distill_divergence(logits.student, teacher, kKdTemperature, objective, kAlpha, kLambda);
      EXPECT_EQ(div.sizes().vec(), (std::vector<int64_t>{kBatch, kTokens})) << what;
      EXPECT_EQ(div.scalar_type(), dtype) << what;
      expect_near_oracle(div, (*want)["divergence"][objective], rtol, atol, what);
      const double mean = (*want)["token_mean"][objective].get<double>();
      EXPECT_NEAR(distill_token_mean(div, label_mask(), kNumTokens).item<double>(), mean, atol + rtol * std::abs(mean))
          << what << " token mean";
    }
  }
}

}  // namespace

// Both sides work in float64 from the same doubles: the temperature divisions in the same order, a
// max-shifted log-softmax over at most 11 entries, and sums of at most 11 terms each ≤ 1 in size (p and q
// are ≤ 1; the log-probs are ≥ −7 but for the one ≈ −24 whose p is ≈ 3e-11). So each side is within some
// tens of ulp of 1 of the exact value (≲ 1e-15 seen): 1e-13 absolute stays clear of that and 1e-12 relative
// covers the larger values, while a swapped λ, a mixture taken the wrong way or js_divergence without its
// ε (4e-10 at token (1,1) with k = 0) shows by orders of magnitude.
TEST(RlDistillLossOracle, DoubleInputsMatchToRounding) { expect_matches_oracle(at::kDouble, 1e-12, 1e-13); }

// float32: the scaled logits (|z| ≤ 3) carry half an ulp (≤ 1.2e-7) each, and log-softmax over ≤ 11 entries
// a few more, so log p and log q are off by ≲ 1e-6 and p, q by ≲ 1e-6 relative. A divergence sums terms
// p·(log p − log q) (or the q / mixture forms) whose error is ≲ p·2e-6 + |term|·1e-6, and Σp, Σq ≤ 1: a
// few 1e-6 in all. adaptive_kl's weights g/(g_head + g_tail) come from sums of |p − q| each off by ≲ 1e-7;
// with the smallest total here (≈ 0.13) that is ≲ 1e-5 relative on a weight, times |fkl − rkl| < 0.9. So
// 2e-5 absolute, two to three times the worst of these bounds (≲ 1e-6 seen), and nothing relative.
TEST(RlDistillLossOracle, FloatInputsMatchToFloatRounding) { expect_matches_oracle(at::kFloat, 0.0, 2e-5); }

// The token mean's gradient against the oracle's central differences (h = 1e-5, float64: truncation
// ~h²·|f'''|/6 ≈ 1e-11, rounding ~ε·|loss|/h ≈ 1e-11; ≲ 1e-11 seen), adaptive_kl's weights held fixed as
// ROLL detaches them; 1e-9 absolute, a hundredfold margin. The
// teacher logits ask for a gradient too, yet nothing reaches them: teacher_topk's outputs are detached.
// With k = 4 the student's logits outside the teacher's top-4 get exactly 0; its -inf logits get exactly 0;
// everything is finite (a 0·inf in the masked entries would make NaNs: ROLL's masked_fill after the
// products, or js_divergence without its ε at a q = 0 entry).
TEST(RlDistillLossGradient, FlowsToTheStudentOnlyAndMatchesCentralDifferences) {
  for (int64_t k : {int64_t{4}, int64_t{0}}) {
    const Logits base = fixed_logits(at::kDouble);
    const std::optional<nlohmann::json> want = oracle(base, k, kTeacherTemperature, /*grad=*/true);
    SKIP_WITHOUT_NUMPY(want);
    for (const std::string& objective : kObjectives) {
      const std::string what = "k = " + std::to_string(k) + " " + objective;
      const at::Tensor teacher_logits = base.teacher.clone().requires_grad_(true);
      const at::Tensor student_logits = base.student.clone().requires_grad_(true);
      const TeacherTopK teacher = teacher_topk(teacher_logits, k, kKdTemperature, kTeacherTemperature);
      EXPECT_FALSE(teacher.log_probs.requires_grad()) << what;
      const at::Tensor div = distill_divergence(student_logits, teacher, kKdTemperature, objective, kAlpha, kLambda);
      ASSERT_TRUE(div.requires_grad()) << what;
      distill_token_mean(div, label_mask(), kNumTokens).backward();
      EXPECT_FALSE(teacher_logits.grad().defined()) << what;
      ASSERT_TRUE(student_logits.grad().defined()) << what;
      const at::Tensor grad = student_logits.grad();
      EXPECT_TRUE(at::isfinite(grad).all().item<bool>()) << what << "\n" << grad;
      expect_near_oracle(grad, (*want)["grad"][objective], 0.0, 1e-9, what + " grad");
      EXPECT_TRUE(at::equal(grad.masked_select(base.student.isinf()), at::zeros({9}, grad.options()))) << what;
      if (k > 0) {
        const at::Tensor outside = at::ones_like(base.student, at::kBool).scatter_(-1, teacher.indices, false);
        EXPECT_TRUE((grad.masked_select(outside) == 0).all().item<bool>()) << what << "\n" << grad;
      }
    }
  }
}

// float32 gradients stay finite too, with every kind of -inf entry present.
TEST(RlDistillLossGradient, FloatGradientsAreFinite) {
  const Logits base = fixed_logits(at::kFloat);
  for (int64_t k : {int64_t{4}, int64_t{0}}) {
    const TeacherTopK teacher = teacher_topk(base.teacher, k, kKdTemperature, kTeacherTemperature);
    for (const std::string& objective : kObjectives) {
      const at::Tensor student_logits = base.student.clone().requires_grad_(true);
      distill_token_mean(distill_divergence(student_logits, teacher, kKdTemperature, objective, kAlpha, kLambda),
                         label_mask(), kNumTokens)
          .backward();
      EXPECT_TRUE(at::isfinite(student_logits.grad()).all().item<bool>()) << k << " " << objective;
    }
  }
}

// With teacher_temperature = 1 and the student's logits equal to the teacher's, q is p exactly: both sides
// scale the same numbers by the same kd_temperature (1.5 here) and take one log-softmax of the same values.
// Every objective is then 0 up to the rounding of the mixtures λp + (1−λ)q (an ulp per entry), including
// adaptive_kl, whose ROLL form would be 0/0 = NaN here (all gaps are 0). That is how training starts when
// the student is initialised from the teacher.
TEST(RlDistillLossIdentity, StudentEqualToTeacherGivesZero) {
  for (at::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const double tol = dtype == at::kDouble ? 1e-15 : 1e-6;  // ~ k ulp of 1 at most
    const at::Tensor logits = fixed_logits(dtype).teacher;
    for (int64_t k : {int64_t{4}, int64_t{0}}) {
      const TeacherTopK teacher = teacher_topk(logits, k, kKdTemperature, /*teacher_temperature=*/1.0);
      for (const std::string& objective : kObjectives) {
        const at::Tensor div = distill_divergence(logits.clone(), teacher, kKdTemperature, objective, kAlpha, kLambda);
        for (double d : values_of(div)) EXPECT_NEAR(d, 0.0, tol) << dtype << " k = " << k << " " << objective;
      }
    }
  }
}

// Top-k mode is the divergence of the two distributions renormalised over the teacher's k ids
// (docs/distill.md): with k = V it keeps every id, so it is the full-vocabulary mode (k = 0) up to
// the order of a V-term sum (a few ulp in double).
TEST(RlDistillLossIdentity, TopKOfTheWholeVocabularyIsTheFullMode) {
  const auto logits = fixed_logits(at::kDouble);
  const int64_t V = logits.teacher.size(-1);
  const TeacherTopK all = teacher_topk(logits.teacher, V, kKdTemperature, 0.8);
  const TeacherTopK full = teacher_topk(logits.teacher, 0, kKdTemperature, 0.8);
  for (const std::string& objective : kObjectives) {
    const at::Tensor a = distill_divergence(logits.student, all, kKdTemperature, objective, kAlpha, kLambda);
    const at::Tensor b = distill_divergence(logits.student, full, kKdTemperature, objective, kAlpha, kLambda);
    EXPECT_TRUE(at::allclose(a, b, 1e-12, 1e-13)) << objective << "\n" << a << "\n" << b;
  }
}

// The one-token case by hand: p = (0.5, 0.5) against q = (0.75, 0.25) (student logits log 3 and 0 at
// kd_temperature 1) gives forward KL ½ log(2/3) + ½ log 2 = ½ log(4/3), reverse KL ¾ log(3/2) + ¼ log ½.
// adaptive_kl with α = 0.5: p sorted is (0.5, 0.5), cumsum (0.5, 1): the first is the tail, so
// g_tail = g_head = 0.25 and the loss is the plain average of the two.
TEST(RlDistillLossByHand, TwoEntryTokenMatchesTheFormulas) {
  const at::Tensor teacher_logits = at::zeros({1, 1, 2}, at::kDouble);
  const at::Tensor student_logits = at::tensor(std::vector<double>{std::log(3.0), 0.0}).reshape({1, 1, 2});
  const TeacherTopK teacher = teacher_topk(teacher_logits, 0, 1.0, 1.0);
  const double fkl = 0.5 * std::log(4.0 / 3.0);
  const double rkl = 0.75 * std::log(1.5) + 0.25 * std::log(0.5);
  auto div = [&](const char* objective) {
    return distill_divergence(student_logits, teacher, 1.0, objective, 0.5, kLambda).item<double>();
  };
  EXPECT_NEAR(div("forward_kl"), fkl, 1e-15);
  EXPECT_NEAR(div("reverse_kl"), rkl, 1e-15);
  EXPECT_NEAR(div("adaptive_kl"), 0.5 * (fkl + rkl), 1e-15);
}

TEST(RlDistillLossInputs, UnknownObjectiveIsAConfigErrorListingTheSix) {
  const Logits logits = fixed_logits(at::kDouble);
  const TeacherTopK teacher = teacher_topk(logits.teacher, 4, kKdTemperature, kTeacherTemperature);
  for (const char* bad : {"kl", "forward-kl", "Forward_KL", ""}) {
    try {
      distill_divergence(logits.student, teacher, kKdTemperature, bad, kAlpha, kLambda);
      ADD_FAILURE() << "no error for kd_objective '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "kd_objective");
      const std::string message = e.what();
      EXPECT_NE(message.find("'" + std::string(bad) + "'"), std::string::npos) << message;
      for (const std::string& name : kObjectives) EXPECT_NE(message.find(name), std::string::npos) << message;
    }
  }
  for (const std::string& name : kObjectives) EXPECT_EQ(to_string(parse_distill_objective(name)), name);
}

// Runs `fn`, expects a roll::ConfigError on `key`.
template <typename F>
void expect_config_error(const std::string& key, F&& fn) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected a ConfigError on " << key;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), key) << e.what();
  }
}

TEST(RlDistillLossInputs, BadSettingsAreConfigErrorsOnTheirKeys) {
  const Logits logits = fixed_logits(at::kDouble);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t k : {int64_t{-1}, kVocab + 1})
    expect_config_error("logits_topk", [&] { teacher_topk(logits.teacher, k, 1.0, 1.0); });
  EXPECT_NO_THROW(teacher_topk(logits.teacher, kVocab, 1.0, 1.0));
  for (double temperature : {0.0, -1.0, nan, kInf}) {
    expect_config_error("kd_temperature", [&] { teacher_topk(logits.teacher, 4, temperature, 1.0); });
    expect_config_error("teacher_temperature", [&] { teacher_topk(logits.teacher, 4, 1.0, temperature); });
  }
  const TeacherTopK teacher = teacher_topk(logits.teacher, 4, kKdTemperature, kTeacherTemperature);
  expect_config_error("kd_temperature",
                      [&] { distill_divergence(logits.student, teacher, 0.0, "forward_kl", kAlpha, kLambda); });
  for (const char* skewed : {"skewed_forward_kl", "skewed_reverse_kl"})
    for (double lambda : {-0.1, 1.5, nan})
      expect_config_error("skew_lambda",
                          [&] { distill_divergence(logits.student, teacher, 1.0, skewed, kAlpha, lambda); });
  // skew_lambda and adaptive_kl_alpha matter only to the objectives that use them.
  EXPECT_NO_THROW(distill_divergence(logits.student, teacher, 1.0, "forward_kl", nan, 1.5));
  expect_config_error("adaptive_kl_alpha",
                      [&] { distill_divergence(logits.student, teacher, 1.0, "adaptive_kl", nan, kLambda); });
}

TEST(RlDistillLossInputs, MismatchedShapesAreRejected) {
  const Logits logits = fixed_logits(at::kDouble);
  const TeacherTopK top4 = teacher_topk(logits.teacher, 4, 1.0, 1.0);
  const TeacherTopK whole = teacher_topk(logits.teacher, 0, 1.0, 1.0);
  // Another batch or sequence length than the teacher's.
  EXPECT_THROW(distill_divergence(logits.student.narrow(1, 0, 2), top4, 1.0, "forward_kl", kAlpha, kLambda), Error);
  EXPECT_THROW(distill_divergence(logits.student[0], top4, 1.0, "forward_kl", kAlpha, kLambda), Error);
  // The whole vocabulary of the teacher against a student with another vocabulary size.
  EXPECT_THROW(distill_divergence(logits.student.narrow(2, 0, 10), whole, 1.0, "forward_kl", kAlpha, kLambda), Error);
  // (Top-k ids fit a student whose vocabulary still holds them.)
  EXPECT_NO_THROW(distill_divergence(at::cat({logits.student, logits.student}, 2), top4, 1.0, "forward_kl", kAlpha,
                                     kLambda));
  TeacherTopK no_mask = top4;
  no_mask.inf_mask = at::Tensor();
  EXPECT_THROW(distill_divergence(logits.student, no_mask, 1.0, "forward_kl", kAlpha, kLambda), Error);
  EXPECT_THROW(teacher_topk(at::zeros({}, at::kDouble), 0, 1.0, 1.0), Error);
  EXPECT_THROW(teacher_topk(at::zeros({2, 3}, at::kLong), 0, 1.0, 1.0), Error);

  const at::Tensor div = at::zeros({kBatch, kTokens}, at::kDouble);
  EXPECT_THROW(distill_token_mean(div, label_mask().narrow(1, 0, 2), kNumTokens), Error);
  for (double n : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()})
    EXPECT_THROW(distill_token_mean(div, label_mask(), n), Error) << n;
}

// ROLL fills the padding tokens with 0 before summing: a NaN there (a padding row whose logits are all
// -inf, say) must not reach the mean. Numeric 0/1 masks work as bool ones.
TEST(RlDistillLossTokenMean, SumsTheLabelledTokensOverNumTokens) {
  const at::Tensor div =
      at::tensor(std::vector<double>{0.5, 1.25, -0.25, std::numeric_limits<double>::quiet_NaN(), 2.0, 0.125})
          .reshape({kBatch, kTokens});
  const double want = (0.5 + 1.25 - 0.25 + 2.0 + 0.125) / 8.0;  // num_tokens may count other ranks' tokens
  EXPECT_DOUBLE_EQ(distill_token_mean(div, label_mask(), 8.0).item<double>(), want);
  EXPECT_DOUBLE_EQ(distill_token_mean(div, label_mask().to(at::kFloat), 8.0).item<double>(), want);
}

// A micro-batch whose rows have no trained position (a prompt that fills sequence_length) hands
// the student trainer zero positions: every objective gives an empty divergence whose sum is 0.
TEST(RlDistillLossIdentity, NoPositionsGiveAnEmptyDivergence) {
  const int64_t V = 11;
  const at::Tensor teacher_logits = at::zeros({0, V}, at::kFloat);
  const at::Tensor student_logits = at::zeros({0, V}, at::kFloat).requires_grad_(true);
  for (int64_t k : {int64_t{4}, int64_t{0}}) {
    const TeacherTopK teacher = teacher_topk(teacher_logits, k, 1.0, 1.0);
    for (const std::string& objective : kObjectives) {
      const at::Tensor div = distill_divergence(student_logits, teacher, 1.0, objective, kAlpha, kLambda);
      EXPECT_EQ(div.numel(), 0) << objective;
      EXPECT_EQ(div.sum().item<double>(), 0.0) << objective;
    }
  }
}

}  // namespace roll::rl

