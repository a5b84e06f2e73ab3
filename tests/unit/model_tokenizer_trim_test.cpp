// A trimmed vocabulary (model/tokenizer_trim.h) is a working tokenizer of the same text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "roll/core/error.h"
#include "roll/model/model_init.h"
#include "roll/model/tokenizer.h"
#include "roll/model/tokenizer_trim.h"

namespace fs = std::filesystem;

namespace roll::model {
namespace {

struct Trimmed {
  Tokenizer full, small;
  int64_t vocab_size;
};

Trimmed load_trimmed(int64_t vocab, const fs::path& dir) {
  const std::string src = default_tokenizer_dir();
  const auto tok = nlohmann::json::parse(std::ifstream(src + "/tokenizer.json"));
  const auto cfg = nlohmann::json::parse(std::ifstream(src + "/tokenizer_config.json"));
  TrimmedTokenizer t = trim_tokenizer(tok, cfg, vocab);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << t.tokenizer.dump();
  std::ofstream(dir / "tokenizer_config.json") << t.tokenizer_config.dump();
  return {Tokenizer::from_dir(src), Tokenizer::from_dir(dir.string()), t.vocab_size};
}

const std::vector<std::string> kTexts = {
    "Move P to G without stepping on O.\n_O__\n____\nGP_O\n____\n",
    "<|im_start|>user\nWhat is 12 + 30?<|im_end|>\n<|im_start|>assistant\n\\boxed{42}<|im_end|>",
    "def f(x):\n    return x ** 2  # square\n",
    "日本語のテキストと emoji 🙂, numbers 1234567 and   spaces\t\ttabs",
    "a", "", "<answer>Right</answer>",
};

TEST(ModelTokenizerTrim, TrimmedVocabularyEncodesAndDecodesEveryText) {
  if (!fs::exists(default_tokenizer_dir() + "/tokenizer.json")) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  const fs::path dir = fs::temp_directory_path() / ("roll-trim-" + std::to_string(::getpid()));
  for (int64_t vocab : {256, 1024, 4096}) {
    Trimmed t = load_trimmed(vocab, dir / std::to_string(vocab));
    EXPECT_EQ(t.vocab_size, vocab + 26);  // Qwen3's 26 added tokens follow
    for (const auto& text : kTexts) {
      const auto ids = t.small.encode(text, false);
      for (auto id : ids) {
        EXPECT_GE(id, 0);
        EXPECT_LT(id, t.vocab_size);
      }
      EXPECT_EQ(t.small.decode(ids), text) << vocab;
      // Where the full tokenizer never needs a merge beyond the kept ones, both agree exactly;
      // elsewhere the trimmed one needs at least as many tokens.
      const auto full = t.full.encode(text, false);
      bool all_kept = true;
      for (auto id : full) all_kept = all_kept && (id < vocab);
      if (all_kept) EXPECT_EQ(ids, full) << text;
      else EXPECT_GE(ids.size(), full.size());
    }
    // Special tokens: renumbered, still one token each, still special.
    const auto im = t.small.encode("<|im_start|><|im_end|>", false);
    ASSERT_EQ(im.size(), 2u);
    EXPECT_GE(im[0], vocab);
    EXPECT_TRUE(t.small.is_special(im[0]));
    EXPECT_EQ(t.small.decode(im), "<|im_start|><|im_end|>");
    if (vocab == 256) {  // bytes only: one token per byte of plain ASCII
      EXPECT_EQ(t.small.encode("____\n", false).size(), 5u);
    }
  }
  fs::remove_all(dir);
}

TEST(ModelTokenizerTrim, OutOfRangeVocabularyIsAnError) {
  if (!fs::exists(default_tokenizer_dir() + "/tokenizer.json")) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  const auto tok = nlohmann::json::parse(std::ifstream(default_tokenizer_dir() + "/tokenizer.json"));
  EXPECT_THROW(trim_tokenizer(tok, nlohmann::json::object(), 100), Error);
  EXPECT_THROW(trim_tokenizer(tok, nlohmann::json::object(), 10'000'000), Error);
  nlohmann::json wordpiece = {{"model", {{"type", "WordPiece"}}}};
  EXPECT_THROW(trim_tokenizer(wordpiece, nlohmann::json::object(), 300), Error);
}

}  // namespace
}  // namespace roll::model
