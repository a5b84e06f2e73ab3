#include "roll/model/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::model {

// ---------------------------------------------------------------------------------------------
// Regex

namespace {

// Match data and a JIT stack per thread, shared by every pattern: match data made with
// pcre2_match_data_create is not tied to a pattern (a pattern with more groups than it holds
// still reports the whole match, rc 0), and the JIT stack is assigned per call.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(16, nullptr);
    context = pcre2_match_context_create(nullptr);
    // Lookaheads after long repeats ("\s+(?!\S)" on a long blank run) can outgrow the default
    // 32 KiB machine-stack area; 1 MiB is taken lazily by PCRE2 (mmap) and covers long runs.
    jit_stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
    if (context && jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    if (jit_stack) pcre2_jit_stack_free(jit_stack);
    if (context) pcre2_match_context_free(context);
    if (data) pcre2_match_data_free(data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(const std::string& pattern, bool literal) : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (literal) options |= PCRE2_LITERAL;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err,
                              &err_offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    throw Error(fmt::format("cannot compile regex '{}' at offset {}: {}", pattern, err_offset,
                            reinterpret_cast<const char*>(buf)));
  }
  // Without JIT (a PCRE2 built without it) the interpreter gives the same matches, slower.
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  ThreadMatchState& st = thread_state();
  if (!st.data) throw Error("cannot allocate PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t pos = 0;
  while (pos <= n) {
    int rc = pcre2_match(impl_->code, subject, n, pos, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // pathological input: the interpreter keeps its frames on the heap
      rc = pcre2_match(impl_->code, subject, n, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(rc, buf, sizeof buf);
      throw Error(fmt::format("regex match failed: {}", reinterpret_cast<const char*>(buf)));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t start = ov[0], end = ov[1];
    if (end > start) {
      out.emplace_back(start, end);
      pos = end;
    } else {
      // Empty match: HF drops empty pieces; step over one code point.
      if (start >= n) break;
      pos = start + 1;
      while (pos < n && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
}

const char* gpt2_split_pattern() {
  return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
}

// ---------------------------------------------------------------------------------------------
// PreTokenizer

namespace {

struct Span {
  size_t start, end;
  bool is_match;
};

// HF's NormalizedString::split: the text as alternating (match / gap) spans, then the behaviour.
void split_step(std::string_view piece, const PreTokenizerStep& step, std::vector<std::string_view>& out,
                std::vector<std::pair<size_t, size_t>>& matches, std::vector<Span>& spans) {
  matches.clear();
  spans.clear();
  step.regex->find_all(piece, matches);
  size_t prev = 0;
  for (auto [s, e] : matches) {
    if (s != prev) spans.push_back({prev, s, step.invert});
    spans.push_back({s, e, !step.invert});
    prev = e;
  }
  if (prev != piece.size()) spans.push_back({prev, piece.size(), step.invert});

  auto emit = [&](size_t s, size_t e) {
    if (e > s) out.push_back(piece.substr(s, e - s));
  };
  switch (step.behavior) {
    case SplitBehavior::isolated:
      for (const Span& sp : spans) emit(sp.start, sp.end);
      break;
    case SplitBehavior::removed:
      for (const Span& sp : spans)
        if (!sp.is_match) emit(sp.start, sp.end);
      break;
    case SplitBehavior::merged_with_previous: {
      std::vector<std::pair<size_t, size_t>> acc;
      bool previous_match = false;
      for (const Span& sp : spans) {
        if (sp.is_match && !previous_match && !acc.empty())
          acc.back().second = sp.end;
        else
          acc.emplace_back(sp.start, sp.end);
        previous_match = sp.is_match;
      }
      for (auto [s, e] : acc) emit(s, e);
      break;
    }
    case SplitBehavior::merged_with_next: {
      std::vector<std::pair<size_t, size_t>> acc;  // built right to left
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !acc.empty())
          acc.back().first = it->start;
        else
          acc.emplace_back(it->start, it->end);
        previous_match = it->is_match;
      }
      for (auto it = acc.rbegin(); it != acc.rend(); ++it) emit(it->first, it->second);
      break;
    }
    case SplitBehavior::contiguous: {
      std::vector<std::pair<size_t, size_t>> acc;
      bool previous_match = false;
      for (const Span& sp : spans) {
        if (sp.is_match == previous_match && !acc.empty())
          acc.back().second = sp.end;
        else
          acc.emplace_back(sp.start, sp.end);
        previous_match = sp.is_match;
      }
      for (auto [s, e] : acc) emit(s, e);
      break;
    }
  }
}

}  // namespace

void PreTokenizer::split(std::string_view text, Pieces& out) const {
  if (text.empty()) return;
  const size_t first = out.views.size();
  out.views.push_back(text);
  std::vector<std::string_view> next;
  std::vector<std::pair<size_t, size_t>> matches;
  std::vector<Span> spans;
  for (const PreTokenizerStep& step : steps_) {
    next.clear();
    for (size_t i = first; i < out.views.size(); ++i) {
      std::string_view piece = out.views[i];
      if (step.kind == PreTokenizerStep::Kind::byte_level) {
        if (step.add_prefix_space && piece.front() != ' ') {
          out.arena.push_back(" " + std::string(piece));
          piece = out.arena.back();
        }
        if (!step.regex) {
          next.push_back(piece);
          continue;
        }
      }
      split_step(piece, step, next, matches, spans);
    }
    out.views.resize(first);
    out.views.insert(out.views.end(), next.begin(), next.end());
  }
}

}  // namespace roll::model
