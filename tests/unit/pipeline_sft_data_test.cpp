// SFT data (sft_data.h) with the real Qwen tokenizer and chat templates: the trained tokens are
// exactly the assistant's (checked by decoding the marked and unmarked tokens back to the literal
// texts the templates must produce), for ROLL's columns and for the messages form, the collator's
// shifted labels, ROLL's truncation, malformed rows named by line, ROLL's step plan, and the SFT
// config defaults.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "config_test_util.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/model/model_init.h"
#include "roll/model/tokenizer.h"
#include "roll/pipeline/data/sft_data.h"
#include "roll/workers/sft_trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;
using roll::testing::error_of;
using roll::testing::TempConfigDir;
using namespace roll::pipeline;

namespace {

bool have_tokenizer() { return fs::exists(fs::path(roll::model::default_tokenizer_dir()) / "tokenizer.json"); }

// The text of each maximal run of tokens whose target flag is `trained`, in order.
std::vector<std::string> runs(const roll::model::Tokenizer& tok, const SftSample& s, bool trained) {
  std::vector<std::string> out;
  std::vector<int32_t> cur;
  for (size_t t = 0; t <= s.input_ids.size(); ++t) {
    if (t < s.input_ids.size() && (s.target[t] != 0) == trained) {
      cur.push_back(s.input_ids[t]);
    } else if (!cur.empty()) {
      out.push_back(tok.decode(cur));
      cur.clear();
    }
  }
  return out;
}

class PipelineSftData : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_tokenizer()) GTEST_SKIP() << "tokenizer assets missing under " << roll::model::default_tokenizer_dir();
  }
  SftEncoder encoder(const std::string& template_name, std::optional<std::string> messages = std::nullopt,
                     int64_t sequence_length = 256) {
    SftEncodingOptions o;
    o.template_name = template_name;
    o.messages_key = std::move(messages);
    o.query_key = "input";
    o.system_key = "system";
    o.sequence_length = sequence_length;
    return SftEncoder(roll::model::default_tokenizer_dir(), o);
  }
  TempConfigDir dir_;
};

}  // namespace

TEST_F(PipelineSftData, ColumnsTrainExactlyTheResponseAndItsEndOfTurn) {
  const SftEncoder enc = encoder("chatml");
  const json row = {
      {"system", "Be brief."}, {"instruction", "Add the numbers."}, {"input", "2 and 3"}, {"output", "The sum is 5."}};
  const SftSample s = enc.encode(row);
  ASSERT_EQ(s.input_ids.size(), s.target.size());
  EXPECT_EQ(runs(enc.tokenizer(), s, true), std::vector<std::string>{"The sum is 5.<|im_end|>"});
  // Everything before is the prompt part: ROLL's system turn, prompt + "\n" + query, the generation
  // prompt; the template's final "\n" is dropped, so nothing follows.
  EXPECT_EQ(runs(enc.tokenizer(), s, false),
            std::vector<std::string>{"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nAdd the numbers.\n2 "
                                     "and 3<|im_end|>\n<|im_start|>assistant\n"});
  // An empty query and an empty system prompt are left out, as ROLL's `if query` / `if system_prompt`.
  const SftSample bare = enc.encode({{"system", ""}, {"instruction", "Hi"}, {"input", ""}, {"output", "Hello"}});
  EXPECT_EQ(runs(enc.tokenizer(), bare, false),
            std::vector<std::string>{"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"});
  EXPECT_EQ(runs(enc.tokenizer(), bare, true), std::vector<std::string>{"Hello<|im_end|>"});
}

TEST_F(PipelineSftData, TheTokenizersOwnTemplateTrainsWhatFollowsTheGenerationPrompt) {
  // Qwen3's template renders the final assistant turn with an empty think block after the
  // generation prompt: ROLL trains it as part of the response.
  const SftEncoder enc = encoder("native");
  const SftSample s = enc.encode({{"instruction", "What is 2+2?"}, {"output", "It is 4."}});
  EXPECT_EQ(runs(enc.tokenizer(), s, true), std::vector<std::string>{"<think>\n\n</think>\n\nIt is 4.<|im_end|>"});
  EXPECT_EQ(runs(enc.tokenizer(), s, false),
            std::vector<std::string>{"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"});
}

TEST_F(PipelineSftData, MessagesTrainEveryAssistantTurn) {
  const json messages = json::array({{{"role", "system"}, {"content", "S"}},
                                     {{"role", "user"}, {"content", "First question"}},
                                     {{"role", "assistant"}, {"content", "First answer"}},
                                     {{"role", "user"}, {"content", "Second question"}},
                                     {{"role", "assistant"}, {"content", "Second answer"}}});
  const SftEncoder chatml = encoder("chatml", "messages");
  const SftSample s = chatml.encode({{"messages", messages}});
  EXPECT_EQ(runs(chatml.tokenizer(), s, true),
            (std::vector<std::string>{"First answer<|im_end|>", "Second answer<|im_end|>"}));
  EXPECT_EQ(runs(chatml.tokenizer(), s, false),
            (std::vector<std::string>{"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nFirst question<|im_end|>\n"
                                      "<|im_start|>assistant\n",
                                      "\n<|im_start|>user\nSecond question<|im_end|>\n<|im_start|>assistant\n"}));
  // The same list as a JSON string.
  EXPECT_EQ(chatml.encode({{"messages", messages.dump()}}).target, s.target);

  // Qwen3 renders the earlier turn without a think block once a later user turn follows; the earlier
  // turn still ends at its <|im_end|>.
  const SftEncoder native = encoder("native", "messages");
  const SftSample q = native.encode({{"messages", messages}});
  EXPECT_EQ(runs(native.tokenizer(), q, true),
            (std::vector<std::string>{"First answer<|im_end|>", "<think>\n\n</think>\n\nSecond answer<|im_end|>"}));
}

TEST_F(PipelineSftData, CollatedLabelsAreTheShiftedTrainedTokensAndLongRowsAreTruncated) {
  const SftEncoder enc = encoder("chatml", std::nullopt, 24);
  const std::string path =
      dir_.write("d.jsonl", json{{"instruction", "Hi"}, {"output", "Hello there"}}.dump() + "\n" +
                                json{{"instruction", "Count"}, {"output", std::string(200, 'x')}}.dump() + "\n" +
                                json{{"instruction", std::string(300, 'y')}, {"output", "z"}}.dump() + "\n");
  const SftDataset ds = load_sft_dataset({path}, enc);
  ASSERT_EQ(ds.rows.size(), 3u);
  ASSERT_EQ(ds.files.size(), 1u);
  EXPECT_EQ(ds.files[0].truncated, 2);
  EXPECT_EQ(ds.files[0].no_target, 1);  // its prompt fills the window
  EXPECT_EQ(ds.rows[1].input_ids.size(), 24u);
  EXPECT_EQ(ds.rows[1].origin, path + ":2");
  // The untruncated encoding starts with the same 24 tokens (ROLL keeps the head).
  const SftSample full = enc.encode({{"instruction", "Count"}, {"output", std::string(200, 'x')}});
  EXPECT_EQ(std::vector<int32_t>(full.input_ids.begin(), full.input_ids.begin() + 24), ds.rows[1].input_ids);

  std::vector<const SftSample*> rows{&ds.rows[0], &ds.rows[1], &ds.rows[2]};
  const roll::Batch b = collate_sft(rows, 24, enc.pad_id());
  const at::Tensor ids = b.tensor("input_ids"), mask = b.tensor("attention_mask"), pos = b.tensor("position_ids"),
                   labels = b.tensor("labels");
  ASSERT_EQ(ids.sizes(), (std::vector<int64_t>{3, 24}));
  for (int64_t r = 0; r < 3; ++r) {
    const SftSample& s = *rows[static_cast<size_t>(r)];
    const auto n = static_cast<int64_t>(s.input_ids.size());
    for (int64_t t = 0; t < 24; ++t) {
      EXPECT_EQ(mask[r][t].item<int64_t>(), t < n ? 1 : 0);
      EXPECT_EQ(ids[r][t].item<int64_t>(), t < n ? s.input_ids[static_cast<size_t>(t)] : enc.pad_id());
      EXPECT_EQ(pos[r][t].item<int64_t>(), std::min(t, n - 1));
      const bool trained = t + 1 < n && s.target[static_cast<size_t>(t + 1)];
      EXPECT_EQ(labels[r][t].item<int64_t>(),
                trained ? s.input_ids[static_cast<size_t>(t + 1)] : roll::workers::kIgnoreIndex)
          << "row " << r << " column " << t;
    }
  }
  EXPECT_EQ((labels[2] != roll::workers::kIgnoreIndex).sum().item<int64_t>(), 0);
}

TEST_F(PipelineSftData, MalformedRowsAreSkippedAndNamedByLine) {
  const SftEncoder enc = encoder("chatml");
  const std::string path =
      dir_.write("bad.jsonl", json{{"instruction", "Hi"}, {"output", "Hello"}}.dump() + "\n" +  // 1
                                  "{bad json\n" +                                               // 2
                                  json{{"instruction", 5}, {"output", "x"}}.dump() + "\n" +     // 3
                                  json{{"instruction", "a"}}.dump() + "\n" +                    // 4
                                  json{{"instruction", "a"}, {"output", ""}}.dump() + "\n");    // 5
  const SftDataset ds = load_sft_dataset({path}, enc);
  ASSERT_EQ(ds.rows.size(), 1u);
  const SftFileStats& f = ds.files.at(0);
  EXPECT_EQ(f.rows, 5);
  EXPECT_EQ(f.malformed, 4);
  ASSERT_EQ(f.problems.size(), 4u);
  EXPECT_EQ(f.problems[0].rfind("line 2: bad JSON", 0), 0u) << f.problems[0];
  EXPECT_EQ(f.problems[1], "line 3: \"instruction\" must be a string, got number");
  EXPECT_NE(f.problems[2].find("line 4: the row has no \"output\""), std::string::npos) << f.problems[2];
  EXPECT_NE(f.problems[3].find("line 5: the row has an empty \"output\""), std::string::npos) << f.problems[3];

  const SftEncoder msgs = encoder("chatml", "messages");
  const std::string only_bad = dir_.write(
      "msgs.jsonl", json{{"messages", json::array({{{"role", "assistant"}, {"content", "x"}}})}}.dump() + "\n" +
                        json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}.dump() + "\n" +
                        "{\"other\": 1}\n");
  const std::string err = error_of([&] { load_sft_dataset({only_bad}, msgs); });
  EXPECT_NE(err.find(only_bad + ": no usable SFT rows (3 read, 3 malformed)"), std::string::npos) << err;
  EXPECT_NE(err.find("line 1: \"messages\"[0] is an assistant turn"), std::string::npos) << err;
  EXPECT_NE(err.find("line 2: \"messages\" has no assistant turn"), std::string::npos) << err;
  EXPECT_NE(err.find("line 3: the row has no \"messages\""), std::string::npos) << err;
}

TEST(PipelineSftDataSteps, RollsStepPlan) {
  // 100 rows, 2 ranks x 4 x GA 2 = 16 per step: 6 steps per epoch, the last 4 rows dropped.
  SftStepPlan p = plan_sft_steps(-1, 100, 2, 4, 2, 1.0);
  EXPECT_EQ(p.global_batch, 16);
  EXPECT_EQ(p.steps_per_epoch, 6);
  EXPECT_EQ(p.epochs, 1);
  EXPECT_EQ(p.pipeline_steps, 6);
  EXPECT_EQ(p.worker_max_steps, 12);
  p = plan_sft_steps(-1, 100, 2, 4, 2, 2.5);  // whole epochs: ceil
  EXPECT_EQ(p.epochs, 3);
  EXPECT_EQ(p.pipeline_steps, 18);
  p = plan_sft_steps(10, 100, 2, 4, 2, 1.0);  // max_steps wins, over as many epochs as it takes
  EXPECT_EQ(p.epochs, 2);
  EXPECT_EQ(p.pipeline_steps, 10);
  EXPECT_EQ(p.worker_max_steps, 20);
  EXPECT_NE(error_of([] { plan_sft_steps(-1, 15, 2, 4, 2, 1.0); }).find("fewer than one global batch of 16"),
            std::string::npos);
  EXPECT_NE(error_of([] { plan_sft_steps(-1, 100, 1, 4, 2, 0.0); }).find("num_train_epochs must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { plan_sft_steps(5, 100, 1, 0, 2, 1.0); }).find("per_device_train_batch_size must be >= 1"),
            std::string::npos);
}

TEST(PipelineSftDataConfig, SftDefaultsAreRolls) {
  TempConfigDir d;
  d.write("exp/sft.yaml", R"(sequence_length: 64
pretrain: /m
global_template: chatml
sft_train:
  data_args: {file_name: d.json, template: qwen2_5}
  device_mapping: list(range(0,1))
)");
  auto l = roll::testing::load_in(d, "exp", "sft");
  EXPECT_EQ(l.config.max_steps, -1);  // SFTConfig: -1 (the pipeline derives the steps)
  const SftEncodingOptions o = sft_encoding_options(l.config);
  EXPECT_EQ(o.prompt_key, "instruction");
  EXPECT_EQ(o.response_key, "output");
  EXPECT_EQ(o.template_name, "chatml");  // global_template wins over data_args.template
  EXPECT_EQ(o.sequence_length, 64);
  EXPECT_FALSE(o.messages_key);
  EXPECT_EQ(roll::testing::load_in(d, "exp", "sft", {"max_steps=7"}).config.max_steps, 7);
}
