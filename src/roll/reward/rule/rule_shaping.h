#pragma once
// The pieces ROLL's rule reward workers (CrossThinkQA, IFEval) share: the response text they read,
// the repetition and length shaping they add to the rule's reward, and the float16 arithmetic the
// sum is done in (ROLL builds these tensors as torch.float16, so -1/9 arrives as -0.11108).
#include <cstdint>
#include <string>
#include <string_view>

namespace roll::reward::rule {

// The decoded response with every "<|endoftext|>", then "<pad>", then "<|im_end|>" removed (three
// single passes, in that order).
std::string without_special_tokens(std::string_view response);

// Text after the last "</think>" with its leading '\n's removed; the whole text when there is none.
std::string extract_after_last_think(std::string_view text);

// 3-gram repetition penalty in [-0.5, 0]: words are the lowercased text split on whitespace,
// penalty = -0.5 * (1 - distinct 3-grams / 3-grams); 0 with fewer than 3 words.
double repetition_penalty(std::string_view text);

// ROLL's length reward over `length` tokens: -0.5 below 100, 0 above 400, linear in between.
double response_length_reward(int64_t length);

// IEEE half precision, round to nearest even (through float, as a Python float becomes a
// torch.float16 element): the value stored in an fp16 tensor.
double to_fp16(double value);
// a + b and coef * a as torch computes them on fp16 tensors: in float, rounded to fp16.
double fp16_add(double a, double b);
double fp16_scale(double coef, double a);

}  // namespace roll::reward::rule
