#pragma once
// UTF-8 helpers of the tokenizer: repair of invalid input, Unicode normalisation (libutf8proc),
// the GPT-2 byte <-> unicode table of byte-level BPE, and the character classes HF's added-token
// matching uses. Internal to roll/model; no library headers leak from here.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "roll/core/utf8.h"

namespace roll::model::unicode {

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Replaces every ill-formed sequence by U+FFFD, one per maximal subpart (Unicode 3.9 "best
// practice", the policy of Python's bytes.decode(errors='replace'), WHATWG's TextDecoder and
// Rust's from_utf8_lossy). Well-formed input comes back unchanged.
std::string replace_invalid_utf8(std::string_view s);

enum class NormalForm { nfc, nfd, nfkc, nfkd };

// Normalises well-formed UTF-8 (run replace_invalid_utf8 first). ASCII input is returned as is.
std::string normalize(std::string_view s, NormalForm form);
inline std::string nfc(std::string_view s) { return normalize(s, NormalForm::nfc); }
// NFC quick check: true when every code point is one NFC can neither change nor combine with
// its neighbour (ccc 0, no canonical decomposition, never the second of a composition), so
// nfc(s) == s without running the normaliser. False means "maybe", never "no".
bool is_nfc_quick(std::string_view s);

// Simple (one code point to one) Unicode lower-casing, as HF's Lowercase normalizer.
std::string lowercase(std::string_view s);

// Decodes the code point starting at s[i] of well-formed UTF-8 and advances i past it.
char32_t next_code_point(std::string_view s, size_t& i);
// Code point that ends at s[end-1] of well-formed UTF-8 (end > 0).
char32_t last_code_point(std::string_view s);
using roll::append_utf8;  // core/utf8.h

// Rust's char::is_whitespace (the White_Space property), as HF's lstrip/rstrip use it.
bool is_whitespace(char32_t cp);
// Rust's char::is_alphanumeric, approximated by the general categories L* and N* (HF's
// single_word test); Other_Alphabetic marks are not counted.
bool is_alphanumeric(char32_t cp);

// GPT-2's bytes_to_unicode(): byte b is written as the UTF-8 of byte_to_unicode()[b].
const std::array<std::string, 256>& byte_to_unicode();
// Inverse of byte_to_unicode(): the byte of code point cp, or -1 when cp is no byte's image.
int unicode_to_byte(char32_t cp);

}  // namespace roll::model::unicode
