// DPO data (dpo_data.h) with the real Qwen tokenizer: each response is the assistant turn of a
// one-turn conversation, pairs collate as rows 2i (chosen) and 2i+1 (rejected) with response_mask
// on exactly the trained tokens, a pair with a side longer than sequence_length is dropped (as
// ROLL filters it), malformed rows are named, and a file without a usable pair is an error.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "config_test_util.h"
#include "roll/core/error.h"
#include "roll/model/model_init.h"
#include "roll/model/tokenizer.h"
#include "roll/pipeline/data/dpo_data.h"

namespace fs = std::filesystem;
using nlohmann::json;
using roll::testing::error_of;
using roll::testing::TempConfigDir;
using namespace roll::pipeline;

namespace {

bool have_tokenizer() { return fs::exists(fs::path(roll::model::default_tokenizer_dir()) / "tokenizer.json"); }

class PipelineDpoData : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_tokenizer()) GTEST_SKIP() << "tokenizer assets missing under " << roll::model::default_tokenizer_dir();
  }
  SftEncoder encoder(int64_t sequence_length) {
    SftEncodingOptions o;
    o.template_name = "chatml";
    o.prompt_key = "instruction";
    o.response_key = "output";
    o.sequence_length = sequence_length;
    return SftEncoder(roll::model::default_tokenizer_dir(), o);
  }
  TempConfigDir dir_;
};

// The text of row `r`'s tokens where `mask` is 1.
std::string masked_text(const roll::model::Tokenizer& tok, const roll::Batch& b, const std::string& mask, int64_t r) {
  std::vector<int32_t> ids;
  const at::Tensor in = b.tensor("input_ids")[r], m = b.tensor(mask)[r];
  for (int64_t t = 0; t < in.size(0); ++t)
    if (m[t].item<int64_t>() != 0) ids.push_back(static_cast<int32_t>(in[t].item<int64_t>()));
  return tok.decode(ids);
}

}  // namespace

TEST_F(PipelineDpoData, PairsInterleaveAndTheResponseMaskCoversTheAnswerOnly) {
  const std::string file = dir_.write("pairs.jsonl",
                                      json({{"instruction", "What is 2 + 3?"}, {"good", "5."}, {"bad", "7?"}}).dump() +
                                          "\n" +
                                          json({{"instruction", "What is 1 + 1?"}, {"good", "2."}, {"bad", "No."}}).dump() +
                                          "\n");
  const SftEncoder enc = encoder(64);
  const DpoDataset d = load_dpo_dataset({file}, enc, "good", "bad");
  ASSERT_EQ(d.pairs.size(), 2u);
  std::vector<const DpoPair*> pairs{&d.pairs[0], &d.pairs[1]};
  const roll::Batch b = collate_dpo(pairs, 64, enc.pad_id());
  ASSERT_EQ(b.size(), 4);
  EXPECT_EQ(masked_text(enc.tokenizer(), b, "response_mask", 0), "5.<|im_end|>");
  EXPECT_EQ(masked_text(enc.tokenizer(), b, "response_mask", 1), "7?<|im_end|>");
  EXPECT_EQ(masked_text(enc.tokenizer(), b, "response_mask", 2), "2.<|im_end|>");
  EXPECT_EQ(masked_text(enc.tokenizer(), b, "response_mask", 3), "No.<|im_end|>");
  // Both sides of a pair share the prompt: the tokens before the response are the same.
  EXPECT_EQ(masked_text(enc.tokenizer(), b, "attention_mask", 0).rfind("<|im_start|>user\nWhat is 2 + 3?", 0), 0u);
  const at::Tensor prompt0 = b.tensor("input_ids")[0].slice(0, 0, 10), prompt1 = b.tensor("input_ids")[1].slice(0, 0, 10);
  EXPECT_TRUE(at::equal(prompt0, prompt1));
  // response_mask is inside the attention mask.
  EXPECT_TRUE(((b.tensor("response_mask") == 1) & (b.tensor("attention_mask") == 0)).any().item<bool>() == false);
}

TEST_F(PipelineDpoData, LongPairsAreDroppedAndMalformedRowsNamed) {
  const std::string long_answer(400, 'x');
  const std::string file = dir_.write(
      "pairs.jsonl", json({{"instruction", "Q1"}, {"chosen", "a"}, {"rejected", "b"}}).dump() + "\n" +
                         json({{"instruction", "Q2"}, {"chosen", long_answer}, {"rejected", "b"}}).dump() + "\n" +
                         json({{"instruction", "Q3"}, {"chosen", "a"}}).dump() + "\n" + "{not json\n");
  const DpoDataset d = load_dpo_dataset({file}, encoder(32), "chosen", "rejected");
  EXPECT_EQ(d.pairs.size(), 1u);
  EXPECT_EQ(d.rows, 4);
  EXPECT_EQ(d.too_long, 1);
  EXPECT_EQ(d.malformed, 2);
  EXPECT_EQ(d.pairs[0].origin, file + ":1");

  const std::string none = dir_.write("none.jsonl", json({{"instruction", "Q"}, {"chosen", "a"}}).dump() + "\n");
  const std::string err = error_of([&] { load_dpo_dataset({none}, encoder(32), "chosen", "rejected"); });
  EXPECT_NE(err.find("no usable preference pair"), std::string::npos) << err;
  EXPECT_NE(err.find("'rejected'"), std::string::npos) << err;
}
