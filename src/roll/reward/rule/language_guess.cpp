#include "roll/reward/rule/language_guess.h"

#include <map>
#include <vector>

#include "roll/reward/rule/py_text.h"

namespace roll::reward::rule {
namespace {

enum class Script { latin, cyrillic, greek, arabic, hebrew, han, kana, hangul, thai, devanagari, bengali,
                    gurmukhi, gujarati, tamil, telugu, kannada, malayalam, other };

Script script_of(char32_t c) {
  if (c < 0x250) return Script::latin;  // ASCII letters, Latin-1, Extended-A/B
  if (c >= 0x1E00 && c <= 0x1EFF) return Script::latin;  // Latin Extended Additional (Vietnamese)
  if (c >= 0x370 && c <= 0x3FF) return Script::greek;
  if (c >= 0x400 && c <= 0x52F) return Script::cyrillic;
  if (c >= 0x590 && c <= 0x5FF) return Script::hebrew;
  if ((c >= 0x600 && c <= 0x6FF) || (c >= 0x750 && c <= 0x77F) || (c >= 0xFB50 && c <= 0xFEFF)) return Script::arabic;
  if (c >= 0x900 && c <= 0x97F) return Script::devanagari;
  if (c >= 0x980 && c <= 0x9FF) return Script::bengali;
  if (c >= 0xA00 && c <= 0xA7F) return Script::gurmukhi;
  if (c >= 0xA80 && c <= 0xAFF) return Script::gujarati;
  if (c >= 0xB80 && c <= 0xBFF) return Script::tamil;
  if (c >= 0xC00 && c <= 0xC7F) return Script::telugu;
  if (c >= 0xC80 && c <= 0xCFF) return Script::kannada;
  if (c >= 0xD00 && c <= 0xD7F) return Script::malayalam;
  if (c >= 0xE00 && c <= 0xE7F) return Script::thai;
  if ((c >= 0x1100 && c <= 0x11FF) || (c >= 0x3130 && c <= 0x318F) || (c >= 0xAC00 && c <= 0xD7AF)) return Script::hangul;
  if ((c >= 0x3040 && c <= 0x30FF) || (c >= 0x31F0 && c <= 0x31FF)) return Script::kana;
  if ((c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF)) return Script::han;
  return Script::other;
}

bool has_any(std::u32string_view text, std::u32string_view chars) {
  for (char32_t c : text)
    if (chars.find(c) != std::u32string_view::npos) return true;
  return false;
}

size_t count_of(std::u32string_view text, std::u32string_view chars) {
  size_t n = 0;
  for (char32_t c : text)
    if (chars.find(c) != std::u32string_view::npos) ++n;
  return n;
}

std::string cyrillic_language(std::u32string_view t) {
  if (has_any(t, U"іїєґІЇЄҐ")) return "uk";
  if (has_any(t, U"ѓќѕљњџјЃЌЅЉЊЏЈ")) return "mk";
  if (has_any(t, U"ъЪ") && !has_any(t, U"ыэёЫЭЁ")) return "bg";
  return "ru";
}

std::string arabic_language(std::u32string_view t) {
  if (has_any(t, U"ےںٹڈڑھ")) return "ur";
  if (has_any(t, U"پچژگکی")) return "fa";
  return "ar";
}

// Characters found in traditional but not in simplified Chinese (frequent ones), and the reverse.
std::string chinese_language(std::u32string_view t) {
  const size_t traditional = count_of(t, U"們這個國說會來時為與學對開長門東車馬見語關點發實還現問題經樣從後給讓過應");
  const size_t simplified = count_of(t, U"们这个国说会来时为与学对开长门东车马见语关点发实还现问题经样从后给让过应");
  return traditional > simplified ? "zh-tw" : "zh-cn";
}

struct LatinProfile {
  const char* code;
  std::vector<std::u32string> words;
};

// The most frequent function words of each language, lowercase; words shared by several
// languages count for each of them.
const std::vector<LatinProfile>& latin_profiles() {
  static const std::vector<LatinProfile> p = {
      {"en", {U"the", U"and", U"of", U"to", U"is", U"in", U"that", U"it", U"you", U"for", U"with", U"this", U"are", U"was", U"be", U"on", U"not", U"have", U"they", U"what"}},
      {"de", {U"der", U"die", U"und", U"das", U"ist", U"nicht", U"ich", U"zu", U"den", U"mit", U"sich", U"ein", U"eine", U"auf", U"auch", U"es", U"dem", U"sie", U"wir", U"für"}},
      {"fr", {U"le", U"la", U"les", U"et", U"est", U"des", U"une", U"un", U"du", U"que", U"pour", U"dans", U"pas", U"qui", U"je", U"vous", U"il", U"nous", U"sur", U"avec"}},
      {"es", {U"el", U"la", U"los", U"las", U"de", U"que", U"y", U"en", U"es", U"un", U"una", U"por", U"con", U"para", U"del", U"se", U"no", U"lo", U"más", U"como"}},
      {"it", {U"il", U"di", U"che", U"e", U"la", U"è", U"un", U"per", U"non", U"una", U"sono", U"del", U"della", U"gli", U"le", U"con", U"ma", U"come", U"questo", U"anche"}},
      {"pt", {U"o", U"a", U"de", U"que", U"e", U"do", U"da", U"em", U"um", U"uma", U"para", U"não", U"com", U"os", U"as", U"se", U"mais", U"por", U"é", U"você"}},
      {"nl", {U"de", U"het", U"een", U"en", U"van", U"is", U"dat", U"niet", U"ik", U"je", U"op", U"te", U"zijn", U"met", U"voor", U"er", U"maar", U"ook", U"wat", U"hij"}},
      {"sv", {U"och", U"att", U"det", U"är", U"som", U"en", U"på", U"för", U"med", U"inte", U"jag", U"har", U"av", U"till", U"den", U"om", U"ett", U"vi", U"kan", U"du"}},
      {"da", {U"og", U"at", U"det", U"er", U"en", U"på", U"til", U"ikke", U"jeg", U"har", U"med", U"som", U"af", U"for", U"den", U"de", U"vi", U"kan", U"mig", U"du"}},
      {"no", {U"og", U"det", U"er", U"å", U"som", U"på", U"en", U"til", U"ikke", U"jeg", U"har", U"med", U"av", U"for", U"den", U"de", U"vi", U"kan", U"meg", U"du"}},
      {"fi", {U"ja", U"on", U"ei", U"se", U"että", U"oli", U"hän", U"mutta", U"kun", U"niin", U"ovat", U"myös", U"tämä", U"mitä", U"minä", U"sinä", U"me", U"he", U"kuin", U"joka"}},
      {"pl", {U"i", U"w", U"nie", U"się", U"na", U"to", U"że", U"z", U"jest", U"do", U"jak", U"co", U"ale", U"tak", U"o", U"po", U"jego", U"od", U"są", U"dla"}},
      {"cs", {U"a", U"je", U"se", U"na", U"v", U"to", U"že", U"s", U"z", U"do", U"jsem", U"ale", U"jak", U"by", U"pro", U"tak", U"co", U"jsou", U"od", U"také"}},
      {"hu", {U"a", U"az", U"és", U"hogy", U"nem", U"is", U"egy", U"van", U"de", U"meg", U"már", U"csak", U"mint", U"ez", U"volt", U"még", U"el", U"ki", U"fel", U"vagy"}},
      {"ro", {U"și", U"în", U"de", U"la", U"este", U"că", U"nu", U"pe", U"cu", U"un", U"o", U"care", U"să", U"mai", U"din", U"pentru", U"sunt", U"ce", U"se", U"au"}},
      {"tr", {U"ve", U"bir", U"bu", U"da", U"de", U"için", U"ile", U"çok", U"ne", U"gibi", U"daha", U"olarak", U"ama", U"ben", U"sen", U"o", U"var", U"değil", U"mi", U"kadar"}},
      {"id", {U"dan", U"yang", U"di", U"itu", U"dengan", U"untuk", U"tidak", U"ini", U"dari", U"dalam", U"akan", U"pada", U"juga", U"saya", U"ke", U"karena", U"ada", U"bisa", U"atau", U"mereka"}},
      {"sw", {U"na", U"ya", U"wa", U"kwa", U"ni", U"za", U"katika", U"la", U"kuwa", U"hii", U"cha", U"ambao", U"lakini", U"sana", U"yake", U"hiyo", U"huo", U"wake", U"pia", U"kama"}},
      {"vi", {U"và", U"của", U"là", U"có", U"không", U"những", U"được", U"một", U"các", U"cho", U"người", U"này", U"với", U"trong", U"đã", U"để", U"khi", U"tôi", U"đến", U"như"}},
      {"ca", {U"el", U"la", U"els", U"les", U"de", U"i", U"que", U"en", U"és", U"un", U"una", U"per", U"amb", U"del", U"als", U"no", U"més", U"però", U"seu", U"aquest"}},
      {"tl", {U"ang", U"ng", U"sa", U"na", U"at", U"mga", U"ay", U"ko", U"mo", U"hindi", U"siya", U"ito", U"kung", U"ako", U"niya", U"para", U"lang", U"pa", U"din", U"naman"}},
  };
  return p;
}

// Letters that only some languages use, tried in order when no function word decides.
const std::vector<std::pair<std::u32string, const char*>>& latin_letters() {
  static const std::vector<std::pair<std::u32string, const char*>> l = {
      {U"ơưđĐƠƯạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ", "vi"},
      {U"ăĂțȚșȘşŞ", "ro"},
      {U"ğĞıİ", "tr"},
      {U"őűŐŰ", "hu"},
      {U"řŘěĚůŮ", "cs"},
      {U"łŁąĄęĘśŚźŹżŻńŃ", "pl"},
      {U"ñÑ¿¡", "es"},
      {U"ãõÃÕ", "pt"},
      {U"ßẞ", "de"},
      {U"åÅ", "sv"},
      {U"æÆøØ", "da"},
      {U"çÇœŒ", "fr"},
      {U"äöüÄÖÜ", "de"},
  };
  return l;
}

std::string latin_language(std::u32string_view text) {
  std::map<std::u32string, size_t> words;
  for (const auto& w : word_runs(py_lower(text))) ++words[w];
  const char* best = nullptr;
  size_t best_hits = 0;
  for (const auto& p : latin_profiles()) {
    size_t hits = 0;
    for (const auto& w : p.words) {
      auto it = words.find(w);
      if (it != words.end()) hits += it->second;
    }
    if (hits > best_hits) {
      best_hits = hits;
      best = p.code;
    }
  }
  if (best) return best;
  for (const auto& [letters, code] : latin_letters())
    if (has_any(text, letters)) return code;
  return "en";
}

}  // namespace

std::string guess_language(std::u32string_view text) {
  std::map<Script, size_t> letters;
  for (char32_t c : text) {
    if (!py_isword(c) || c == '_' || (c >= '0' && c <= '9')) continue;
    const Script s = script_of(c);
    if (s == Script::latin && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && c < 0xC0) continue;
    ++letters[s];
  }
  letters.erase(Script::other);
  if (letters.empty()) return "";
  // Japanese mixes kana with kanji: any kana makes it Japanese, as langdetect's profiles do in practice.
  if (letters.count(Script::kana) && letters[Script::kana] * 10 >= letters[Script::han]) return "ja";
  Script main = letters.begin()->first;
  for (const auto& [s, n] : letters)
    if (n > letters[main]) main = s;
  switch (main) {
    case Script::latin: return latin_language(text);
    case Script::cyrillic: return cyrillic_language(text);
    case Script::greek: return "el";
    case Script::arabic: return arabic_language(text);
    case Script::hebrew: return "he";
    case Script::han: return chinese_language(text);
    case Script::kana: return "ja";
    case Script::hangul: return "ko";
    case Script::thai: return "th";
    case Script::devanagari: return "hi";
    case Script::bengali: return "bn";
    case Script::gurmukhi: return "pa";
    case Script::gujarati: return "gu";
    case Script::tamil: return "ta";
    case Script::telugu: return "te";
    case Script::kannada: return "kn";
    case Script::malayalam: return "ml";
    case Script::other: break;
  }
  return "";
}

}  // namespace roll::reward::rule
