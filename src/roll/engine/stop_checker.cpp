#include "roll/engine/stop_checker.h"

#include <algorithm>

namespace roll::engine {

namespace {
std::span<const int32_t> generated(const Sequence& seq) {
  return std::span<const int32_t>(seq.tokens).subspan(seq.prompt_len);
}
}  // namespace

std::optional<StopDecision> check_stop(const Sequence& seq, const SamplingParams& p, int64_t max_new_tokens,
                                       const Detokenizer& detokenize) {
  if (seq.num_generated() <= 0) return std::nullopt;
  const int32_t last = seq.tokens.back();
  if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), last) != p.stop_token_ids.end())
    return StopDecision{FinishReason::stop, ""};
  if (!p.stop.empty() && detokenize) {
    // A new match must end in the newest token (an older one would have stopped the sequence),
    // and a stop string of L bytes spans at most L byte-level tokens: decoding the last L tokens
    // (and a few more, so a UTF-8 character cut at the window's start cannot hide a match) keeps
    // each step's cost independent of the output length.
    size_t longest = 0;
    for (const auto& s : p.stop) longest = std::max(longest, s.size());
    auto out = generated(seq);
    const size_t window = std::min(out.size(), longest + 4);
    const std::string text = detokenize(out.subspan(out.size() - window));
    for (const auto& s : p.stop)
      if (text.find(s) != std::string::npos) return StopDecision{FinishReason::stop, s};
  }
  if (seq.num_generated() >= max_new_tokens) return StopDecision{FinishReason::length, ""};
  return std::nullopt;
}

std::string output_text(const Sequence& seq, const SamplingParams& p, const std::string& stop_string,
                        const Detokenizer& detokenize) {
  if (!detokenize) return "";
  std::string text = detokenize(generated(seq));
  if (!stop_string.empty()) {
    const size_t at = text.find(stop_string);
    if (at != std::string::npos) text.resize(at + (p.include_stop_str_in_output ? stop_string.size() : 0));
  }
  return text;
}

}  // namespace roll::engine
