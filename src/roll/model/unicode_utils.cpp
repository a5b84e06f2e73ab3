#include "roll/model/unicode_utils.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "roll/core/error.h"

namespace roll::model::unicode {
namespace {

// Length of the well-formed prefix of the sequence starting at s[i] (Unicode table 3-7), and
// whether that prefix is a complete character. A lead byte that can start nothing gives 0.
struct SeqScan {
  size_t valid_len;
  bool complete;
};

SeqScan scan_sequence(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {1, true};
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {0, false};  // 80..C1 (continuation, overlong lead) or F5..FF
  }
  size_t len = 1;
  while (len < need && i + len < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + len]);
    const unsigned char l = len == 1 ? lo : 0x80, h = len == 1 ? hi : 0xBF;
    if (b < l || b > h) break;
    ++len;
  }
  return {len, len == need};
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII runs eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const SeqScan sc = scan_sequence(s, i);
    if (!sc.complete) return false;
    i += sc.valid_len;
  }
  return true;
}

std::string replace_invalid_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  size_t i = 0;
  while (i < s.size()) {
    const SeqScan sc = scan_sequence(s, i);
    if (sc.complete) {
      out.append(s.data() + i, sc.valid_len);
      i += sc.valid_len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for the maximal subpart (at least one byte)
      i += sc.valid_len == 0 ? 1 : sc.valid_len;
    }
  }
  return out;
}

namespace {

// Bitmap over U+0000..U+2FFFF of code points that may change under NFC or combine with the
// previous one; built from utf8proc's own data (version-independent): non-zero combining class,
// a canonical decomposition, any non-initial element of a canonical decomposition (the
// composition "seconds"), and the Hangul V/T jamo that compose algorithmically.
constexpr char32_t kQuickLimit = 0x30000;

struct NfcUnsafe {
  std::vector<uint64_t> bits = std::vector<uint64_t>(kQuickLimit / 64, 0);
  void set(char32_t cp) {
    if (cp < kQuickLimit) bits[cp >> 6] |= uint64_t{1} << (cp & 63);
  }
  NfcUnsafe() {
    utf8proc_int32_t buf[32];
    for (char32_t cp = 0x300; cp < kQuickLimit; ++cp) {
      const auto c = static_cast<utf8proc_int32_t>(cp);
      if (utf8proc_get_property(c)->combining_class != 0) set(cp);
      int boundclass = 0;
      const utf8proc_ssize_t n = utf8proc_decompose_char(c, buf, 32, UTF8PROC_DECOMPOSE, &boundclass);
      if (n == 1 && buf[0] == c) continue;
      // Composition seconds: every non-initial element of a decomposition (a superset).
      for (utf8proc_ssize_t k = 1; k > 0 && k < n && k < 32; ++k) set(static_cast<char32_t>(buf[k]));
      // Hangul syllables and precomposed letters that NFC keeps (NFC_QC=Yes) are safe; singletons
      // and composition exclusions are not.
      if (cp >= 0xAC00 && cp <= 0xD7A3) continue;
      std::string one, back;
      append_utf8(one, cp);
      utf8proc_uint8_t* dst = nullptr;
      const utf8proc_ssize_t m = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(one.data()),
                                              static_cast<utf8proc_ssize_t>(one.size()), &dst,
                                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
      if (m > 0) back.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(m));
      std::free(dst);
      if (back != one) set(cp);
    }
    for (char32_t cp = 0x1161; cp <= 0x1175; ++cp) set(cp);
    for (char32_t cp = 0x11A8; cp <= 0x11C2; ++cp) set(cp);
  }
  bool unsafe(char32_t cp) const { return cp >= kQuickLimit || ((bits[cp >> 6] >> (cp & 63)) & 1); }
};

const NfcUnsafe& nfc_unsafe() {
  static const NfcUnsafe t;
  return t;
}

}  // namespace

bool is_nfc_quick(std::string_view s) {
  const NfcUnsafe* table = nullptr;
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    // Below U+0300 nothing has ccc != 0 or NFC_QC != Yes; its lead bytes are < 0xCC.
    if (b < 0xCC) {
      i += b < 0x80 ? 1 : 2;
      continue;
    }
    if (!table) table = &nfc_unsafe();
    if (table->unsafe(next_code_point(s, i))) return false;
  }
  return true;
}

std::string normalize(std::string_view s, NormalForm form) {
  bool ascii = true;
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return std::string(s);
  if (form == NormalForm::nfc && is_nfc_quick(s)) return std::string(s);
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::nfc: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::nfd: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::nfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::nfkd: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                   &dst, static_cast<utf8proc_option_t>(options));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> hold(dst, &std::free);
  if (n < 0) throw Error(std::string("unicode normalisation failed: ") + utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = next_code_point(s, i);
    append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
  }
  return out;
}

char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
  char32_t cp = b0 & (0x7F >> len);
  for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

char32_t last_code_point(std::string_view s) {
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t i = start;
  return next_code_point(s, i);
}

bool is_whitespace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_alphanumeric(char32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

namespace {

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  std::array<char32_t, 256> code_point{};
  ByteTables() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      code_point[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      append_utf8(to_unicode[b], code_point[b]);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() { return tables().to_unicode; }

int unicode_to_byte(char32_t cp) {
  // Images are the bytes themselves (printable ones) or U+0100..U+0143 for the 68 others.
  static const std::array<int16_t, 324> table = [] {
    std::array<int16_t, 324> t;
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[tables().code_point[b]] = static_cast<int16_t>(b);
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

}  // namespace roll::model::unicode
