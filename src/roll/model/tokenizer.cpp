#include "roll/model/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "roll/core/error.h"
#include "roll/model/bpe.h"
#include "roll/model/pretokenizer.h"
#include "roll/model/unicode_utils.h"

namespace roll::model {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct AddedToken {
  TokenId id = -1;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// Leftmost-longest matching of added tokens (HF uses an Aho-Corasick automaton with that match
// kind): scan to the first byte that can start a token, try that byte's tokens longest first.
struct AddedMatcher {
  std::vector<const AddedToken*> tokens;
  std::vector<std::string> patterns;  // what is matched (normalised content for normalized tokens)
  std::array<std::vector<int>, 256> by_first;
  bool empty() const { return tokens.empty(); }

  void build() {
    for (auto& v : by_first) v.clear();
    for (size_t i = 0; i < patterns.size(); ++i)
      if (!patterns[i].empty()) by_first[static_cast<unsigned char>(patterns[i][0])].push_back(static_cast<int>(i));
    for (auto& v : by_first)
      std::stable_sort(v.begin(), v.end(), [&](int a, int b) { return patterns[a].size() > patterns[b].size(); });
  }
};

// One piece of the input: an added token (id >= 0) or text to run through the model.
struct Segment {
  TokenId id;
  size_t start, end;
};

bool ends_with_word(std::string_view s) { return !s.empty() && unicode::is_alphanumeric(unicode::last_code_point(s)); }
bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  return unicode::is_alphanumeric(unicode::next_code_point(s, i));
}

// HF AddedVocabulary::find_matches, including the single_word / lstrip / rstrip rules.
void find_added(const AddedMatcher& m, std::string_view s, bool skip_special, std::vector<Segment>& out) {
  size_t start_offset = 0, pos = 0;
  const size_t n = s.size();
  if (m.empty()) pos = n;
  while (pos < n) {
    const auto& cands = m.by_first[static_cast<unsigned char>(s[pos])];
    int found = -1;
    for (int idx : cands) {
      const std::string& p = m.patterns[idx];
      if (p.size() <= n - pos && s.compare(pos, p.size(), p) == 0) {
        found = idx;
        break;
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = *m.tokens[found];
    size_t start = pos, stop = pos + m.patterns[found].size();
    pos = stop;  // the automaton resumes after a match even when the match is discarded below
    if (start < start_offset) continue;  // inside whitespace an earlier rstrip took
    if (skip_special && tok.special) continue;
    if (tok.single_word) {
      const bool start_space = start == 0 || !ends_with_word(s.substr(0, start));
      const bool stop_space = stop == n || !starts_with_word(s.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) {
      size_t newstart = start;
      while (newstart > 0) {
        const std::string_view head = s.substr(0, newstart);
        const char32_t cp = unicode::last_code_point(head);
        if (!unicode::is_whitespace(cp)) break;
        do --newstart;
        while (newstart > 0 && (static_cast<unsigned char>(s[newstart]) & 0xC0) == 0x80);
      }
      start = std::max(newstart, start_offset);
    }
    if (tok.rstrip) {
      while (stop < n) {
        size_t j = stop;
        if (!unicode::is_whitespace(unicode::next_code_point(s, j))) break;
        stop = j;
      }
      pos = stop;
    }
    if (start_offset < start) out.push_back({-1, start_offset, start});
    out.push_back({tok.id, start, stop});
    start_offset = stop;
  }
  if (start_offset < n) out.push_back({-1, start_offset, n});
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open tokenizer file {}", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json parse_json(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: invalid JSON: {}", path, e.what()));
  }
}

// model.vocab and model.merges of a tokenizer.json, taken out of the parse as they stream by:
// building a DOM of their ~150k entries each was most of the load time.
struct StreamedModel {
  std::vector<std::pair<std::string, TokenId>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::string error;  // the first entry of the wrong shape
};

json parse_tokenizer_json(const std::string& path, StreamedModel& out) {
  const std::string text = read_file(path);
  std::string key1, key2, key3;
  std::vector<std::string> pair;
  using E = json::parse_event_t;
  auto in = [&](const char* k2) { return key1 == "model" && key2 == k2; };
  auto note = [&](std::string msg) {
    if (out.error.empty()) out.error = std::move(msg);
  };
  auto callback = [&](int depth, E event, json& parsed) -> bool {
    if (event == E::key) {
      if (depth == 1) key1 = parsed.get<std::string>(), key2.clear();
      else if (depth == 2) key2 = parsed.get<std::string>();
      else if (depth == 3 && in("vocab")) return key3 = parsed.get<std::string>(), false;
      return true;
    }
    if (depth == 3 && in("vocab") && event == E::value) {
      if (parsed.is_number_integer()) out.vocab.emplace_back(std::move(key3), parsed.get<TokenId>());
      else note(fmt::format("model.vocab entry '{}' is not an integer id", key3));
      return false;
    }
    if (depth >= 3 && in("merges")) {
      if (depth == 3 && event == E::value) {
        if (!parsed.is_string()) {
          note(fmt::format("merge {} is neither \"a b\" nor [\"a\", \"b\"]", out.merges.size()));
          return false;
        }
        const std::string& m = parsed.get_ref<const std::string&>();
        const size_t sp = m.find(' ');
        if (sp == std::string::npos) note(fmt::format("merge {} ('{}') is not of the form \"a b\"", out.merges.size(), m));
        else out.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
        return false;
      }
      if (depth == 3 && event == E::array_start) pair.clear();
      if (depth == 4 && event == E::value) pair.push_back(parsed.is_string() ? parsed.get<std::string>() : std::string());
      if (depth == 3 && event == E::array_end) {
        if (pair.size() == 2) out.merges.emplace_back(std::move(pair[0]), std::move(pair[1]));
        else note(fmt::format("merge {} is neither \"a b\" nor [\"a\", \"b\"]", out.merges.size()));
      }
      if (depth >= 4 || (depth == 3 && event != E::array_start)) return false;
    }
    return true;
  };
  try {
    return json::parse(text, callback);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: invalid JSON: {}", path, e.what()));
  }
}

std::string str_or(const json& j, const char* key, std::string fallback = {}) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}
bool bool_or(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// "eos_token": "<|im_end|>" or {"content": "<|im_end|>", ...} or null.
std::string token_name(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return str_or(*it, "content");
  return {};
}

AddedToken parse_added(const json& j, TokenId id) {
  AddedToken t;
  t.id = id;
  t.content = j.at("content").get<std::string>();
  t.special = bool_or(j, "special", false);
  t.lstrip = bool_or(j, "lstrip", false);
  t.rstrip = bool_or(j, "rstrip", false);
  t.single_word = bool_or(j, "single_word", false);
  t.normalized = bool_or(j, "normalized", !t.special);
  return t;
}

}  // namespace

struct Tokenizer::Impl {
  std::string path;

  std::vector<std::string> model_tokens;  // model vocabulary by id (byte-level strings; "" = none)
  TokenIndex vocab;                        // over model_tokens
  std::vector<AddedToken> added;
  std::unordered_map<std::string, TokenId> added_by_content;
  std::unordered_map<TokenId, const AddedToken*> added_by_id;
  AddedMatcher raw_matcher, normalized_matcher;

  std::vector<unicode::NormalForm> norm_forms;  // applied in order
  std::vector<bool> norm_lowercase;             // parallel: true = Lowercase step instead
  PreTokenizer pre_tokenizer;
  std::unique_ptr<BpeModel> bpe;
  std::vector<TokenId> post_prefix, post_suffix;

  // Indexed by id.
  std::vector<std::string> id_bytes;  // what the ByteLevel decoder writes
  std::vector<uint8_t> id_flags;      // kExists | kSpecial
  static constexpr uint8_t kExists = 1, kSpecial = 2;

  std::string eos, pad, bos, chat_template;
  std::optional<TokenId> eos_id, pad_id, bos_id;
  bool split_special_tokens = false;
  bool clean_up_spaces = false;

  [[noreturn]] void fail(const std::string& what) const { throw Error(fmt::format("{}: {}", path, what)); }

  // An existing id's added content or vocabulary string.
  const std::string& token_string(TokenId id) const {
    if (auto it = added_by_id.find(id); it != added_by_id.end()) return it->second->content;
    return model_tokens[id];
  }

  std::optional<TokenId> lookup(std::string_view token) const {
    if (auto it = added_by_content.find(std::string(token)); it != added_by_content.end()) return it->second;
    return vocab.find(token);
  }

  void load_model(const json& model, StreamedModel& streamed);
  void load_normalizer(const json& j);
  void load_pre_tokenizer(const json& j);
  void check_decoder(const json& j);
  void load_post_processor(const json& j);
  void load_config(const json& config, const std::string& config_path);
  void finish();

  std::string normalize(std::string_view s) const {
    if (norm_forms.empty()) return std::string(s);
    std::string cur(s);
    for (size_t i = 0; i < norm_forms.size(); ++i)
      cur = norm_lowercase[i] ? unicode::lowercase(cur) : unicode::normalize(cur, norm_forms[i]);
    return cur;
  }

  void encode_text(std::string_view text, std::vector<TokenId>& out, Pieces& pieces) const {
    pieces.clear();
    pre_tokenizer.split(text, pieces);
    for (std::string_view p : pieces.views) bpe->encode(p, out);
  }

  std::vector<TokenId> encode(std::string_view input, bool add_special_tokens) const {
    std::string repaired;
    std::string_view text = input;
    if (!unicode::is_valid_utf8(input)) {
      repaired = unicode::replace_invalid_utf8(input);
      text = repaired;
    }
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 8);
    if (add_special_tokens) out.insert(out.end(), post_prefix.begin(), post_prefix.end());
    std::vector<Segment> segs, inner;
    Pieces pieces;
    find_added(raw_matcher, text, split_special_tokens, segs);
    for (const Segment& seg : segs) {
      if (seg.id >= 0) {
        out.push_back(seg.id);
        continue;
      }
      const std::string normalized = normalize(text.substr(seg.start, seg.end - seg.start));
      if (normalized_matcher.empty()) {
        encode_text(normalized, out, pieces);
        continue;
      }
      inner.clear();
      find_added(normalized_matcher, normalized, split_special_tokens, inner);
      for (const Segment& s : inner) {
        if (s.id >= 0)
          out.push_back(s.id);
        else
          encode_text(std::string_view(normalized).substr(s.start, s.end - s.start), out, pieces);
      }
    }
    if (add_special_tokens) out.insert(out.end(), post_suffix.begin(), post_suffix.end());
    return out;
  }
};

void Tokenizer::Impl::load_model(const json& model, StreamedModel& streamed) {
  const std::string type = str_or(model, "type", model.contains("merges") ? "BPE" : "");
  if (type != "BPE") fail(fmt::format("model type '{}' is not supported (only byte-level BPE)", type));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!str_or(model, key).empty())
      fail(fmt::format("BPE option {} is not supported (byte-level BPE does not use it)", key));
  }
  if (!streamed.error.empty()) fail(streamed.error);
  if (!model.contains("vocab") || !model.at("vocab").is_object() || !model.at("vocab").empty())
    fail("model.vocab is missing or not an object of token -> id");
  if (!model.contains("merges") || !model.at("merges").is_array() || !model.at("merges").empty())
    fail("model.merges is missing or not a list of merges");
  TokenId max_id = -1;
  for (const auto& [tok, id] : streamed.vocab) {
    if (id < 0) fail(fmt::format("token '{}' has a negative id", tok));
    max_id = std::max(max_id, id);
  }
  model_tokens.assign(static_cast<size_t>(max_id + 1), {});
  for (auto& [tok, id] : streamed.vocab) model_tokens[id] = std::move(tok);
  streamed.vocab = {};
  vocab = TokenIndex(&model_tokens);

  std::array<TokenId, 256> byte_ids;
  for (int b = 0; b < 256; ++b) byte_ids[b] = vocab.find(unicode::byte_to_unicode()[b]).value_or(-1);

  std::vector<BpeMerge> merges;
  merges.reserve(streamed.merges.size());
  std::string joined;
  for (size_t i = 0; i < streamed.merges.size(); ++i) {
    const auto& [a, b] = streamed.merges[i];
    joined.assign(a).append(b);
    const auto ia = vocab.find(a), ib = vocab.find(b), im = vocab.find(joined);
    if (!ia || !ib || !im) fail(fmt::format("merge {} ('{} {}') uses a token missing from the vocabulary", i, a, b));
    merges.push_back({*ia, *ib, *im});
  }
  streamed.merges = {};
  BpeModel::Options opt;
  opt.ignore_merges = bool_or(model, "ignore_merges", false);
  bpe = std::make_unique<BpeModel>(byte_ids, merges, opt, &vocab);
}

void Tokenizer::Impl::load_normalizer(const json& j) {
  if (j.is_null()) return;
  const std::string type = str_or(j, "type");
  static const std::unordered_map<std::string, unicode::NormalForm> forms = {
      {"NFC", unicode::NormalForm::nfc},
      {"NFD", unicode::NormalForm::nfd},
      {"NFKC", unicode::NormalForm::nfkc},
      {"NFKD", unicode::NormalForm::nfkd}};
  if (type == "Sequence") {
    for (const json& n : j.at("normalizers")) load_normalizer(n);
  } else if (auto it = forms.find(type); it != forms.end()) {
    norm_forms.push_back(it->second);
    norm_lowercase.push_back(false);
  } else if (type == "Lowercase") {
    norm_forms.push_back(unicode::NormalForm::nfc);  // unused
    norm_lowercase.push_back(true);
  } else {
    fail(fmt::format("normalizer type '{}' is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Sequence)", type));
  }
}

void Tokenizer::Impl::load_pre_tokenizer(const json& j) {
  std::vector<PreTokenizerStep> steps;
  std::vector<const json*> flat;
  auto flatten = [&](auto&& self, const json& n) -> void {
    if (n.is_null()) return;
    if (str_or(n, "type") == "Sequence") {
      for (const json& c : n.at("pretokenizers")) self(self, c);
    } else {
      flat.push_back(&n);
    }
  };
  flatten(flatten, j);
  bool byte_level = false;
  for (const json* np : flat) {
    const json& n = *np;
    const std::string type = str_or(n, "type");
    if (byte_level) fail(fmt::format("pre-tokenizer '{}' after ByteLevel is not supported", type));
    PreTokenizerStep step;
    if (type == "ByteLevel") {
      step.kind = PreTokenizerStep::Kind::byte_level;
      step.add_prefix_space = bool_or(n, "add_prefix_space", true);
      if (bool_or(n, "use_regex", true)) step.regex = std::make_shared<Regex>(gpt2_split_pattern());
      byte_level = true;
    } else if (type == "Split") {
      const json& pat = n.at("pattern");
      try {
        if (pat.contains("Regex"))
          step.regex = std::make_shared<Regex>(pat.at("Regex").get<std::string>());
        else if (pat.contains("String"))
          step.regex = std::make_shared<Regex>(pat.at("String").get<std::string>(), /*literal=*/true);
        else
          fail("Split pre-tokenizer pattern is neither Regex nor String");
      } catch (const Error& e) {
        fail(fmt::format("Split pre-tokenizer: {}", e.what()));
      }
      static const std::unordered_map<std::string, SplitBehavior> behaviors = {
          {"Removed", SplitBehavior::removed},
          {"Isolated", SplitBehavior::isolated},
          {"MergedWithPrevious", SplitBehavior::merged_with_previous},
          {"MergedWithNext", SplitBehavior::merged_with_next},
          {"Contiguous", SplitBehavior::contiguous}};
      const std::string beh = str_or(n, "behavior", "Isolated");
      auto it = behaviors.find(beh);
      if (it == behaviors.end()) fail(fmt::format("Split behavior '{}' is unknown", beh));
      step.behavior = it->second;
      step.invert = bool_or(n, "invert", false);
    } else if (type == "Digits") {
      // HF Digits: each digit alone, or runs of digits, split from the rest.
      const bool individual = bool_or(n, "individual_digits", false);
      step.regex = std::make_shared<Regex>("\\p{N}");
      step.behavior = individual ? SplitBehavior::isolated : SplitBehavior::contiguous;
    } else {
      fail(fmt::format("pre-tokenizer type '{}' is not supported (Split, Digits, ByteLevel, Sequence)", type));
    }
    steps.push_back(std::move(step));
  }
  if (!byte_level) fail("the pre-tokenizer has no ByteLevel step; only byte-level BPE tokenizers are supported");
  pre_tokenizer = PreTokenizer(std::move(steps));
}

void Tokenizer::Impl::check_decoder(const json& j) {
  const std::string type = j.is_null() ? "null" : str_or(j, "type");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    for (const json& d : j.at("decoders")) check_decoder(d);
    return;
  }
  fail(fmt::format("decoder type '{}' is not supported (ByteLevel)", type));
}

void Tokenizer::Impl::load_post_processor(const json& j) {
  if (j.is_null()) return;
  const std::string type = str_or(j, "type");
  if (type == "ByteLevel") return;  // only trims offsets
  if (type == "Sequence") {
    for (const json& p : j.at("processors")) load_post_processor(p);
    return;
  }
  std::vector<TokenId> prefix, suffix;
  if (type == "TemplateProcessing") {
    bool seen_sequence = false;
    const json& specials = j.contains("special_tokens") ? j.at("special_tokens") : json::object();
    for (const json& item : j.at("single")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string name = item.at("SpecialToken").at("id").get<std::string>();
        if (!specials.contains(name)) fail(fmt::format("post_processor names special token '{}' it does not define", name));
        for (const json& id : specials.at(name).at("ids")) (seen_sequence ? suffix : prefix).push_back(id.get<TokenId>());
      }
    }
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    prefix.push_back(j.at("cls").at(1).get<TokenId>());
    suffix.push_back(j.at("sep").at(1).get<TokenId>());
  } else {
    fail(fmt::format("post_processor type '{}' is not supported", type));
  }
  // A later processor in a Sequence wraps the output of the earlier ones.
  post_prefix.insert(post_prefix.begin(), prefix.begin(), prefix.end());
  post_suffix.insert(post_suffix.end(), suffix.begin(), suffix.end());
}

void Tokenizer::Impl::load_config(const json& c, const std::string& config_path) {
  if (!c.is_object()) throw Error(fmt::format("{}: not a JSON object", config_path));
  // added_tokens_decoder: what transformers hands the fast tokenizer; its flags win.
  if (auto it = c.find("added_tokens_decoder"); it != c.end() && it->is_object()) {
    for (auto t = it->begin(); t != it->end(); ++t) {
      TokenId id;
      try {
        id = static_cast<TokenId>(std::stol(t.key()));
      } catch (const std::exception&) {
        throw Error(fmt::format("{}: added_tokens_decoder key '{}' is not an id", config_path, t.key()));
      }
      AddedToken tok = parse_added(t.value(), id);
      auto same = std::find_if(added.begin(), added.end(), [&](const AddedToken& a) { return a.id == id; });
      if (same != added.end())
        *same = tok;
      else
        added.push_back(tok);
    }
  }
  eos = token_name(c, "eos_token");
  pad = token_name(c, "pad_token");
  bos = token_name(c, "bos_token");
  std::vector<std::string> special_names = {eos, pad, bos, token_name(c, "unk_token")};
  if (auto it = c.find("additional_special_tokens"); it != c.end() && it->is_array()) {
    for (const json& s : *it) special_names.push_back(s.is_string() ? s.get<std::string>() : str_or(s, "content"));
  }
  for (const std::string& name : special_names) {
    if (name.empty()) continue;
    for (AddedToken& a : added)
      if (a.content == name) a.special = true;
  }
  if (auto it = c.find("chat_template"); it != c.end()) {
    if (it->is_string()) {
      chat_template = it->get<std::string>();
    } else if (it->is_array()) {
      for (const json& t : *it)
        if (str_or(t, "name") == "default") chat_template = str_or(t, "template");
      if (chat_template.empty() && !it->empty()) chat_template = str_or(it->at(0), "template");
    }
  }
  split_special_tokens = bool_or(c, "split_special_tokens", false);
  clean_up_spaces = bool_or(c, "clean_up_tokenization_spaces", false);
}

void Tokenizer::Impl::finish() {
  std::sort(added.begin(), added.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  TokenId max_id = static_cast<TokenId>(model_tokens.size()) - 1;
  for (const AddedToken& a : added) {
    if (a.id < 0) fail(fmt::format("added token '{}' has a negative id", a.content));
    max_id = std::max(max_id, a.id);
  }
  const size_t n = static_cast<size_t>(max_id + 1);
  id_bytes.assign(n, {});
  id_flags.assign(n, 0);
  for (size_t id = 0; id < model_tokens.size(); ++id)
    if (!model_tokens[id].empty()) id_flags[id] = kExists;
  for (const AddedToken& a : added) {
    id_flags[a.id] = kExists | (a.special ? kSpecial : 0);
    added_by_content[a.content] = a.id;
    added_by_id[a.id] = &a;
  }
  // ByteLevel decoder: a token whose every character is a byte image gives those bytes, any
  // other (an added token such as "<|im_start|>" is all images; one with a plain space is not)
  // gives its UTF-8 as is.
  for (size_t id = 0; id < n; ++id) {
    if (!id_flags[id]) continue;
    const std::string& t = token_string(static_cast<TokenId>(id));
    std::string bytes;
    bool all = true;
    for (size_t i = 0; i < t.size();) {
      const int b = unicode::unicode_to_byte(unicode::next_code_point(t, i));
      if (b < 0) {
        all = false;
        break;
      }
      bytes += static_cast<char>(b);
    }
    id_bytes[id] = all ? bytes : t;
  }
  for (const AddedToken& a : added) {
    AddedMatcher& m = a.normalized ? normalized_matcher : raw_matcher;
    m.tokens.push_back(&a);
    m.patterns.push_back(a.normalized ? normalize(a.content) : a.content);
  }
  raw_matcher.build();
  normalized_matcher.build();
  if (!eos.empty()) eos_id = lookup(eos);
  if (!pad.empty()) pad_id = lookup(pad);
  if (!bos.empty()) bos_id = lookup(bos);
}

// ---------------------------------------------------------------------------------------------

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_files(const std::string& tokenizer_json, const std::string& tokenizer_config_json) {
  auto impl = std::make_unique<Impl>();
  impl->path = tokenizer_json;
  StreamedModel streamed;
  const json tj = parse_tokenizer_json(tokenizer_json, streamed);
  try {
    if (!tj.is_object() || !tj.contains("model")) impl->fail("not a tokenizer.json (no \"model\")");
    impl->load_model(tj.at("model"), streamed);
    if (auto it = tj.find("added_tokens"); it != tj.end() && it->is_array()) {
      for (const json& a : *it) impl->added.push_back(parse_added(a, a.at("id").get<TokenId>()));
    }
    impl->load_normalizer(tj.value("normalizer", json()));
    impl->load_pre_tokenizer(tj.value("pre_tokenizer", json()));
    impl->check_decoder(tj.value("decoder", json()));
    impl->load_post_processor(tj.value("post_processor", json()));
  } catch (const json::exception& e) {
    impl->fail(fmt::format("malformed tokenizer.json: {}", e.what()));
  }
  if (!tokenizer_config_json.empty()) {
    const json cj = parse_json(tokenizer_config_json);
    try {
      impl->load_config(cj, tokenizer_config_json);
    } catch (const json::exception& e) {
      throw Error(fmt::format("{}: malformed tokenizer_config.json: {}", tokenizer_config_json, e.what()));
    }
  }
  impl->finish();
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_dir(const std::string& dir) {
  const fs::path d(dir);
  if (!fs::is_directory(d)) throw Error(fmt::format("tokenizer directory {} does not exist", dir));
  const fs::path tj = d / "tokenizer.json";
  if (!fs::exists(tj))
    throw Error(fmt::format("{} not found (only tokenizer.json tokenizers are supported, not vocab.json/merges.txt)",
                            tj.string()));
  const fs::path cj = d / "tokenizer_config.json";
  Tokenizer t = from_files(tj.string(), fs::exists(cj) ? cj.string() : std::string());
  const fs::path jinja = d / "chat_template.jinja";
  if (t.impl_->chat_template.empty() && fs::exists(jinja)) t.impl_->chat_template = read_file(jinja.string());
  return t;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens);
}

std::vector<std::vector<TokenId>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                          bool add_special_tokens, int num_threads) const {
  std::vector<std::vector<TokenId>> out(texts.size());
  size_t threads = num_threads > 0 ? static_cast<size_t>(num_threads) : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, texts.size());
  if (threads <= 1) {
    for (size_t i = 0; i < texts.size(); ++i) out[i] = impl_->encode(texts[i], add_special_tokens);
    return out;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&] {
    try {
      for (size_t i; (i = next.fetch_add(1)) < texts.size();) out[i] = impl_->encode(texts[i], add_special_tokens);
    } catch (...) {
      std::lock_guard lock(error_mu);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  const Impl& m = *impl_;
  std::string bytes;
  for (TokenId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= m.id_flags.size() || !m.id_flags[id]) continue;
    if (skip_special_tokens && (m.id_flags[id] & Impl::kSpecial)) continue;
    bytes += m.id_bytes[id];
  }
  std::string text = unicode::replace_invalid_utf8(bytes);
  if (m.clean_up_spaces) {
    // transformers' clean_up_tokenization.
    static const std::pair<const char*, const char*> rules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (auto [from, to] : rules) {
      const std::string f(from), t(to);
      std::string r;
      size_t pos = 0, hit;
      while ((hit = text.find(f, pos)) != std::string::npos) {
        r.append(text, pos, hit - pos);
        r += t;
        pos = hit + f.size();
      }
      r.append(text, pos);
      text = std::move(r);
    }
  }
  return text;
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const { return impl_->lookup(token); }

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->id_flags.size() || !impl_->id_flags[id]) return std::nullopt;
  return impl_->token_string(id);
}

bool Tokenizer::is_special(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->id_flags.size() && (impl_->id_flags[id] & Impl::kSpecial);
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_flags.size()); }
std::optional<TokenId> Tokenizer::eos_id() const { return impl_->eos_id; }
std::optional<TokenId> Tokenizer::pad_id() const { return impl_->pad_id; }
std::optional<TokenId> Tokenizer::bos_id() const { return impl_->bos_id; }
const std::string& Tokenizer::eos_token() const { return impl_->eos; }
const std::string& Tokenizer::pad_token() const { return impl_->pad; }
const std::string& Tokenizer::bos_token() const { return impl_->bos; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }
void Tokenizer::clear_cache() const { impl_->bpe->clear_cache(); }
size_t Tokenizer::cache_entries() const { return impl_->bpe->cache_entries(); }

}  // namespace roll::model
