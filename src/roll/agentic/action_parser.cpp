#define PCRE2_CODE_UNIT_WIDTH 8
#include "roll/agentic/action_parser.h"

#include <fmt/format.h>
#include <pcre2.h>

#include <algorithm>
#include <cctype>

#include "roll/core/error.h"

namespace roll::agentic {

struct ActionParser::Regex {
  pcre2_code* code = nullptr;
  uint32_t groups = 0;
  ~Regex() {
    if (code) pcre2_code_free(code);
  }
};

namespace {

std::string strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

ActionParser::ActionParser(const std::string& pattern, std::map<int, std::string> actions,
                           std::vector<std::string> special_tokens)
    : regex_(std::make_unique<Regex>()), actions_(std::move(actions)), special_tokens_(std::move(special_tokens)) {
  int err = 0;
  PCRE2_SIZE off = 0;
  // Python's re.search(pattern, text, re.DOTALL); UTF so that '.' spans whole characters.
  regex_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                               PCRE2_DOTALL | PCRE2_UTF, &err, &off, nullptr);
  if (!regex_->code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    throw Error(fmt::format("action_pattern '{}' is not a valid regular expression at offset {}: {}", pattern, off,
                            reinterpret_cast<const char*>(buf)));
  }
  pcre2_pattern_info(regex_->code, PCRE2_INFO_CAPTURECOUNT, &regex_->groups);
  if (regex_->groups < 1 || regex_->groups > 2)
    throw Error(fmt::format("action_pattern '{}' must have 1 group (action) or 2 groups (think, action), has {}",
                            pattern, regex_->groups));
}

ActionParser::~ActionParser() = default;
ActionParser::ActionParser(ActionParser&&) noexcept = default;

ParsedAction ActionParser::parse(const std::string& response) const {
  std::string text = response;
  for (const auto& tok : special_tokens_)
    for (size_t p; (p = text.find(tok)) != std::string::npos;) text.erase(p, tok.size());
  text = strip(text);
  ParsedAction out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex_->code, nullptr);
  // Invalid UTF-8 from a model must not abort the match: check it ourselves (no PCRE2_NO_UTF_CHECK).
  int rc = pcre2_match(regex_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, md, nullptr);
  if (rc > 0) {
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    auto group = [&](int g) {
      if (ov[2 * g] == PCRE2_UNSET) return std::string();
      return strip(text.substr(ov[2 * g], ov[2 * g + 1] - ov[2 * g]));
    };
    if (regex_->groups == 2) {
      out.think_content = group(1);
      out.action_content = group(2);
    } else {
      out.action_content = group(1);
    }
    const std::string want = lower(out.action_content);
    for (const auto& [id, name] : actions_)
      if (lower(name) == want) out.action = id;
  }
  pcre2_match_data_free(md);
  return out;
}

}  // namespace roll::agentic
