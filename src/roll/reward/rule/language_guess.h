#pragma once
// A deterministic stand-in for langdetect's detect(), which ROLL's IFEval language check calls
// (docs/rewards.md, "ifeval"; langdetect itself is random-seeded n-gram profiles and cannot run
// here). It returns langdetect's codes: the writing system decides for non-Latin text (ja when
// kana are present, ko, zh-cn / zh-tw, ru / uk / bg / mk, ar / fa / ur, he, el, th, hi, bn, pa,
// gu, ta, te, kn, ml), and Latin text goes to the language with the most of its common function
// words (en, de, fr, es, it, pt, nl, sv, da, no, fi, pl, cs, hu, ro, tr, id, sw, vi, ca, tl), then
// to a language whose letters it uses (ñ -> es, ß -> de, ...), else en. Text without letters has
// no language: "" (langdetect raises, the check fails).
#include <string>
#include <string_view>

namespace roll::reward::rule {

std::string guess_language(std::u32string_view text);

}  // namespace roll::reward::rule
