#include "roll/reward/rule/rule_shaping.h"

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "roll/reward/rule/py_text.h"

namespace roll::reward::rule {
namespace {

void remove_all(std::string& s, std::string_view what) {
  std::string out;
  out.reserve(s.size());
  size_t from = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, from)) {
    out.append(s, from, at - from);
    from = at + what.size();
  }
  out.append(s, from, std::string::npos);
  s = std::move(out);
}

}  // namespace

std::string without_special_tokens(std::string_view response) {
  std::string s(response);
  remove_all(s, "<|endoftext|>");
  remove_all(s, "<pad>");
  remove_all(s, "<|im_end|>");
  return s;
}

std::string extract_after_last_think(std::string_view text) {
  constexpr std::string_view kEndThink = "</think>";
  const size_t at = text.rfind(kEndThink);
  if (at == std::string_view::npos) return std::string(text);
  std::string_view rest = text.substr(at + kEndThink.size());
  while (!rest.empty() && rest.front() == '\n') rest.remove_prefix(1);
  return std::string(rest);
}

double repetition_penalty(std::string_view text) {
  constexpr size_t kNgram = 3;
  constexpr double kMaxPenalty = -0.5;
  const std::u32string cps = from_utf8(text);
  if (cps.empty() || py_split(cps).size() < kNgram) return 0.0;
  const std::vector<std::u32string> words = py_split(py_lower(cps));
  if (words.size() < kNgram) return 0.0;  // lowercasing cannot add words, but keeps the division safe
  std::set<std::vector<std::u32string>> distinct;
  const size_t total = words.size() - kNgram + 1;
  for (size_t i = 0; i < total; ++i) distinct.insert({words[i], words[i + 1], words[i + 2]});
  const double scaling = 1.0 - static_cast<double>(distinct.size()) / static_cast<double>(total);
  return scaling * kMaxPenalty;
}

double response_length_reward(int64_t length) {
  constexpr int64_t kMin = 100, kMax = 400;
  if (length < kMin) return -0.5;
  if (length > kMax) return 0.0;
  return -0.5 * static_cast<double>(kMax - length) / static_cast<double>(kMax - kMin);
}

double to_fp16(double value) {
  const float f = static_cast<float>(value);
  if (std::isnan(f) || std::isinf(f) || f == 0.0f) return f;
  const float a = std::fabs(f);
  if (a >= 65520.0f) return std::copysign(std::numeric_limits<double>::infinity(), f);
  int exp = 0;
  std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1): the leading bit is 2^(exp-1)
  // 10 fraction bits below the leading one; subnormals share the quantum 2^-24.
  const int quantum_exp = std::max(exp - 1 - 10, -24);
  const float q = std::ldexp(std::nearbyint(std::ldexp(a, -quantum_exp)), quantum_exp);
  return std::copysign(static_cast<double>(q), f);
}

double fp16_add(double a, double b) {
  return to_fp16(static_cast<double>(static_cast<float>(to_fp16(a)) + static_cast<float>(to_fp16(b))));
}

double fp16_scale(double coef, double a) {
  return to_fp16(static_cast<double>(static_cast<float>(coef) * static_cast<float>(to_fp16(a))));
}

}  // namespace roll::reward::rule
