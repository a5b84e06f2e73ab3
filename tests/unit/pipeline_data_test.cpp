// RLVR prompt data (docs/pipelines.md, tests/.1 test_sampler / test_collator): the stratified sampler and
// the per-step domain split, collation, reading and encoding with the real Qwen tokenizer and chat
// template, domain mapping, malformed rows with their lines, iterator resume, and the synthetic
// generators (answers recomputed here, code solutions run through the code reward).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "config_test_util.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/model/model_init.h"
#include "roll/model/tokenizer.h"
#include "roll/pipeline/data/data_files.h"
#include "roll/pipeline/data/dataset_iterator.h"
#include "roll/pipeline/data/prompt_collator.h"
#include "roll/pipeline/data/prompt_dataset.h"
#include "roll/pipeline/data/rlvr_data.h"
#include "roll/pipeline/data/stratified_sampler.h"
#include "roll/datagen/synthetic_data.h"
#include "roll/reward/code_reward.h"
#include "roll/reward/sandbox.h"

namespace fs = std::filesystem;
using nlohmann::json;
using roll::testing::error_of;
using roll::testing::TempConfigDir;
using namespace roll::pipeline;

namespace {

std::vector<std::string> sample_domains() {  // ROLL's fixture: a x10, b x6, c x4
  std::vector<std::string> d(10, "a");
  d.insert(d.end(), 6, "b");
  d.insert(d.end(), 4, "c");
  return d;
}

std::map<std::string, int> count_domains(const std::vector<int64_t>& batch, const std::vector<std::string>& domain_of) {
  std::map<std::string, int> counts;
  for (int64_t i : batch) ++counts[domain_of[static_cast<size_t>(i)]];
  return counts;
}

bool have_tokenizer() { return fs::exists(fs::path(roll::model::default_tokenizer_dir()) / "tokenizer.json"); }
#define REQUIRE_TOKENIZER() \
  if (!have_tokenizer()) GTEST_SKIP() << "tokenizer assets missing under " << roll::model::default_tokenizer_dir() << ": run scripts/setup"

std::string user_messages(const std::string& content) {
  return json::array({{{"role", "user"}, {"content", content}}}).dump();
}

}  // namespace

// ---- split_batch and BatchStratifiedSampler (tests/datasets/test_sampler.py) ----

TEST(PipelineDataSampler, BasicFunction) {
  const auto domain_of = sample_domains();
  BatchStratifiedSampler s(domain_of, {{"a", 5}, {"b", 3}, {"c", 2}}, 10, /*drop_last=*/true);
  EXPECT_EQ(s.domain_ratios(), (DomainRatios{{"a", 0.5}, {"b", 0.3}, {"c", 0.2}}));
  EXPECT_EQ(s.domain_batch_num(), (DomainCounts{{"a", 5}, {"b", 3}, {"c", 2}}));
  EXPECT_EQ(s.size(), 2);
  size_t total = 0;
  for (const auto& batch : s.batches(7)) {
    ASSERT_EQ(batch.size(), 10u);
    EXPECT_EQ(count_domains(batch, domain_of), (std::map<std::string, int>{{"a", 5}, {"b", 3}, {"c", 2}}));
    total += batch.size();
  }
  EXPECT_EQ(total, 20u);
}

TEST(PipelineDataSampler, IndexExpansionTilesASmallDomain) {
  const std::vector<std::string> domain_of(3, "c");
  BatchStratifiedSampler s(domain_of, {{"c", 1}}, 2, /*drop_last=*/false);
  const auto batches = s.batches(0);
  ASSERT_EQ(batches.size(), 2u);  // ceil(3 / 2)
  std::set<int64_t> used;
  for (const auto& b : batches) {
    EXPECT_EQ(b.size(), 2u);
    used.insert(b.begin(), b.end());
  }
  EXPECT_EQ(used, (std::set<int64_t>{0, 1, 2}));
}

TEST(PipelineDataSampler, RatioCalculation) {
  BatchStratifiedSampler s({"a", "b"}, {{"a", 9}, {"b", 1}}, 10);
  EXPECT_EQ(s.domain_batch_num(), (DomainCounts{{"a", 9}, {"b", 1}}));
  EXPECT_EQ(s.size(), 1);  // drop_last: max(1 // 9, 1 // 1)
}

TEST(PipelineDataSampler, BatchesAreShuffledAndDeterministicInTheSeed) {
  const auto domain_of = sample_domains();
  BatchStratifiedSampler s(domain_of, {{"a", 5}, {"b", 3}, {"c", 2}}, 10);
  const auto batches = s.batches(11);
  const std::vector<std::string> grouped = {"a", "a", "a", "a", "a", "b", "b", "b", "c", "c"};
  for (const auto& batch : batches) {
    std::vector<std::string> domains;
    for (int64_t i : batch) domains.push_back(domain_of[static_cast<size_t>(i)]);
    EXPECT_EQ(count_domains(batch, domain_of), (std::map<std::string, int>{{"a", 5}, {"b", 3}, {"c", 2}}));
    EXPECT_NE(domains, grouped) << "rows within a batch are shuffled";
  }
  EXPECT_EQ(s.batches(11), batches);
  EXPECT_NE(s.batches(12), batches);
}

TEST(PipelineDataSampler, EdgeCases) {
  EXPECT_NE(error_of([] { BatchStratifiedSampler({}, {{"a", 1}}, 10); }).find("empty"), std::string::npos);
  BatchStratifiedSampler one({"a"}, {{"a", 1}}, 1, /*drop_last=*/false);
  EXPECT_EQ(one.size(), 1);
  EXPECT_NE(error_of([] { BatchStratifiedSampler({"a", "b"}, {{"a", 0.05}, {"b", 0.95}}, 10); }).find("'a'"),
            std::string::npos)
      << "a domain with no row of the batch is named";
}

TEST(PipelineDataSampler, DataIntegrityWithoutDropLast) {
  const auto domain_of = sample_domains();
  BatchStratifiedSampler s(domain_of, {{"a", 5}, {"b", 3}, {"c", 2}}, 10, /*drop_last=*/false);
  std::set<int64_t> used;
  for (const auto& b : s.batches(3)) used.insert(b.begin(), b.end());
  for (int64_t i = 0; i < static_cast<int64_t>(domain_of.size()); ++i) EXPECT_TRUE(used.count(i)) << i;
}

TEST(PipelineDataSampler, EmptyDomainRatioEntryIsDropped) {
  std::vector<std::string> domain_of(10, "a");
  domain_of.insert(domain_of.end(), 10, "b");
  BatchStratifiedSampler s(domain_of, {{"a", 0.5}, {"b", 0.3}, {"c", 0.2}}, 10, true);
  ASSERT_EQ(s.domain_ratios().size(), 2u);
  EXPECT_EQ(s.domain_ratios()[0].first, "a");
  EXPECT_EQ(s.domain_ratios()[1].first, "b");
  EXPECT_NEAR(s.domain_ratios()[0].second + s.domain_ratios()[1].second, 1.0, 1e-9);
  EXPECT_EQ(s.domain_batch_num(), (DomainCounts{{"a", 6}, {"b", 4}}));  // int(0.625 * 10), remainder
  const auto batches = s.batches(0);
  EXPECT_GE(batches.size(), 1u);
  for (const auto& b : batches)
    for (int64_t i : b) EXPECT_NE(domain_of[static_cast<size_t>(i)], "c");
}

TEST(PipelineDataSampler, SplitBatchTruncatesAndGivesTheRemainderToTheLast) {
  EXPECT_EQ(split_batch({{"a", 0.5}, {"b", 0.3}, {"c", 0.2}}, 7), (DomainCounts{{"a", 3}, {"b", 2}, {"c", 2}}));
  EXPECT_EQ(split_batch({{"math_rule", 0.3}, {"code", 0.7}}, 10), (DomainCounts{{"math_rule", 3}, {"code", 7}}));
  // Not normalised (as ROLL's pipeline): ratios summing to less than 1 leave more to the last.
  EXPECT_EQ(split_batch({{"a", 0.2}, {"b", 0.2}}, 10), (DomainCounts{{"a", 2}, {"b", 8}}));
  EXPECT_NE(error_of([] { split_batch({{"a", 0.9}, {"b", 0.9}, {"c", 0.5}}, 10); }).find("'c'"), std::string::npos);
  EXPECT_NE(error_of([] { split_batch({{"a", 1}}, 0); }).find("batch size"), std::string::npos);
}

// ---- DatasetIterator ----

TEST(PipelineDataIterator, EpochsArePermutationsSeededBySeedPlusEpoch) {
  DatasetIterator it(7, 42);
  std::vector<int64_t> e0 = it.next(7), e1 = it.next(7);
  EXPECT_EQ(it.epoch(), 2);
  EXPECT_EQ(it.dataset_iter_count(), 14);
  for (const auto* e : {&e0, &e1}) {
    std::vector<int64_t> sorted = *e;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  }
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, DatasetIterator::epoch_order(7, 42, 0));
  EXPECT_EQ(e1, DatasetIterator::epoch_order(7, 43, 0)) << "epoch e is shuffled from seed + e";
  EXPECT_NE(DatasetIterator::epoch_order(7, 41, 0), e0);
}

TEST(PipelineDataIterator, RestoreResumesAtTheSamePosition) {
  DatasetIterator run(5, 3);
  std::vector<int64_t> before = run.next(8);
  const json saved = run.state();
  EXPECT_EQ(saved, (json{{"dataset_iter_count", 8}}));
  std::vector<int64_t> after = run.next(9);

  DatasetIterator resumed(5, 3);
  resumed.load_state(json::parse(saved.dump()));
  EXPECT_EQ(resumed.next(9), after);
  EXPECT_NE(error_of([&] { resumed.load_state(json{{"count", 1}}); }).find("dataset_iter_count"), std::string::npos);
  EXPECT_THROW(DatasetIterator(0, 1), roll::Error);
}

// ---- collation (tests/datasets/test_collator.py) ----

TEST(PipelineDataCollator, LeftPadsToMaxLengthWithPositionIds) {
  const std::vector<int32_t> a = {11, 12, 13, 14, 15}, b = {21, 22, 23};
  const json fa = {{"labels", 1}, {"auxiliary", {{"type", 1}}}}, fb = {{"labels", 0}, {"extra", "x"}};
  roll::Batch batch = collate_prompts({{&a, &fa}, {&b, &fb}}, 8, 151643);
  ASSERT_EQ(batch.size(), 2);
  const at::Tensor ids = batch.tensor("input_ids"), mask = batch.tensor("attention_mask"),
                   pos = batch.tensor("position_ids");
  EXPECT_EQ(ids.sizes(), (at::IntArrayRef{2, 8}));
  EXPECT_EQ(ids.scalar_type(), at::kLong);
  const auto P = 151643;
  EXPECT_TRUE(at::equal(ids, at::tensor({P, P, P, 11, 12, 13, 14, 15, P, P, P, P, P, 21, 22, 23}, at::kLong).view({2, 8})));
  EXPECT_TRUE(at::equal(mask, at::tensor({0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1}, at::kLong).view({2, 8})));
  EXPECT_TRUE(at::equal(pos, at::tensor({0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 1, 2}, at::kLong).view({2, 8})));
  EXPECT_TRUE(at::equal(pos, at::clamp_min(at::cumsum(mask, -1) - 1, 0))) << "ROLL's clip(cumsum(mask) - 1, 0)";
  // Other keys pass through as non-tensor columns; a row without a key gets null.
  EXPECT_EQ(batch.column("labels"), (roll::NonTensorColumn{1, 0}));
  EXPECT_EQ(batch.cell("auxiliary", 0), (json{{"type", 1}}));
  EXPECT_TRUE(batch.cell("auxiliary", 1).is_null());
  EXPECT_EQ(batch.cell("extra", 1), "x");

  const std::vector<int32_t> long_row(9, 1);
  EXPECT_NE(error_of([&] { collate_prompts({{&long_row, nullptr}}, 8, 0); }).find("9 tokens"), std::string::npos);
}

TEST(PipelineDataCollator, RollsCollatorTestWithTheQwenTokenizer) {
  REQUIRE_TOKENIZER();
  const auto tok = roll::model::Tokenizer::from_dir(roll::model::default_tokenizer_dir());
  std::vector<std::vector<int32_t>> ids;
  std::vector<json> fields;
  int label = 1, type = 1;
  for (const char* text : {"Hello, how are you?", "I'm fine, thank you!", "What about you?"}) {
    ids.push_back(tok.encode(text));
    fields.push_back({{"labels", label}, {"auxiliary", {{"type", type++}}}});
    label = 1 - label;
  }
  std::vector<PromptSample> samples;
  for (size_t i = 0; i < ids.size(); ++i) samples.push_back({&ids[i], &fields[i]});
  roll::Batch batch = collate_prompts(samples, 32, *tok.pad_id());
  EXPECT_EQ(batch.tensor("input_ids").size(1), 32);
  EXPECT_EQ(batch.tensor("attention_mask").sum().item<int64_t>(),
            static_cast<int64_t>(ids[0].size() + ids[1].size() + ids[2].size()));
  EXPECT_EQ(batch.column("labels"), (roll::NonTensorColumn{1, 0, 1}));
  EXPECT_EQ(batch.cell("auxiliary", 2), (json{{"type", 3}}));
}

// ---- reading and encoding ----

TEST(PipelineDataFiles, JsonArrayElementsKeepTheirLines) {
  TempConfigDir dir;
  const std::string path = dir.write("rows.json",
                                     "[\n"
                                     "  {\"prompt\": \"a\",\n"
                                     "   \"x\": \"with ] and , inside\"},\n"
                                     "  {\"prompt\": oops},\n"
                                     "  {\"prompt\": \"c\"}\n"
                                     "]\n");
  const auto records = read_json_records(path);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].line, 2);
  EXPECT_EQ(records[0].value["x"], "with ] and , inside");
  EXPECT_EQ(records[1].line, 4);
  EXPECT_NE(records[1].error.find("bad JSON"), std::string::npos);
  EXPECT_EQ(records[2].line, 5);
  EXPECT_EQ(records[2].value["prompt"], "c");
  // A .json file that is not an array is JSON lines.
  EXPECT_EQ(read_json_records(dir.write("lines.json", "{\"a\": 1}\n\n{\"a\": 2}\n")).size(), 2u);
  EXPECT_TRUE(read_json_records(dir.write("empty.json", "[ ]")).empty());
  EXPECT_NE(error_of([&] { read_json_records(dir.write("open.json", "[{\"a\": 1},\n")); }).find("open.json:1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_json_records(dir.path() + "/missing.jsonl"); }).find("missing.jsonl"),
            std::string::npos);
  EXPECT_THROW(read_json_records(dir.write("t.parquet", "")), roll::NotSupportedError);
  // Directories expand to their data files in name order.
  TempConfigDir d2;
  d2.write("b.jsonl", "{}\n");
  d2.write("a.json", "[]");
  d2.write("notes.md", "x");
  const auto files = expand_data_files({d2.path()}, "actor_train.data_args.file_name");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(fs::path(files[0]).filename(), "a.json");
  EXPECT_NE(error_of([&] { expand_data_files({d2.path() + "/nope.jsonl"}, "k.file_name"); }).find("k.file_name"),
            std::string::npos);
}

class PipelineDataEncoding : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_TOKENIZER(); }
  PromptEncoder encoder(int64_t prompt_length = 64) {
    PromptEncodingOptions o;
    o.prompt_length = prompt_length;
    o.tag_to_template = {{"chat", "chatml"}};
    o.tag_to_domain = {{"arith", "math_rule"}, {"py", "code_sandbox"}};
    return PromptEncoder(roll::model::default_tokenizer_dir(), o);
  }
  TempConfigDir dir_;
};

TEST_F(PipelineDataEncoding, MessagesGoThroughTheChatTemplatePromptsDoNot) {
  const PromptEncoder enc = encoder();
  const json list = {{"messages", json::parse(user_messages("What is 2+2?"))}};
  const json str = {{"messages", user_messages("What is 2+2?")}};
  // The Qwen3 template's rendering (checked with Python's jinja2).
  const std::string expected = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(enc.prompt_text(list), expected);
  EXPECT_EQ(enc.prompt_text(str), expected) << "messages as a JSON string";
  EXPECT_EQ(enc.prompt_text({{"prompt", "raw text"}, {"tag", "chat"}}), "raw text");
  // tag_to_template: chatml for tag "chat" (same text here but rendered by another template).
  const json chat = {{"messages", json::array({{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", "U"}}})},
                     {"tag", "chat"}};
  EXPECT_EQ(enc.prompt_text(chat), "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(enc.pad_id(), 151643);

  const std::string path = dir_.write("p.jsonl", list.dump() + "\n");
  const PromptDataset ds = load_prompt_dataset({path}, enc);
  ASSERT_EQ(ds.rows.size(), 1u);
  EXPECT_EQ(enc.tokenizer().decode(ds.rows[0].input_ids), expected);
  EXPECT_EQ(ds.rows[0].input_ids.front(), *enc.tokenizer().token_to_id("<|im_start|>"));
  EXPECT_EQ(ds.rows[0].origin, path + ":1");
}

TEST_F(PipelineDataEncoding, DomainMapping) {
  const PromptEncoder enc = encoder();
  EXPECT_EQ(enc.domain_of({{"domain", "llm_judge"}, {"tag", "arith"}}), "llm_judge") << "a row's domain wins";
  EXPECT_EQ(enc.domain_of({{"domain", nullptr}, {"tag", "py"}}), "code_sandbox") << "null domain: from the tag";
  EXPECT_EQ(enc.domain_of({{"tag", "arith"}}), "math_rule");
  EXPECT_EQ(enc.domain_of({{"tag", "unknown"}}), "math_rule") << "default";
  EXPECT_EQ(enc.domain_of(json::object()), "math_rule");
  EXPECT_NE(error_of([&] { enc.domain_of({{"domain", 3}}); }).find("domain"), std::string::npos);
}

TEST_F(PipelineDataEncoding, LengthFilterKeepsFiveExclusiveToPromptLengthInclusive) {
  const PromptEncoder enc = encoder();
  const auto& tok = enc.tokenizer();
  // Raw prompts of known token counts (no template on `prompt`).
  std::string five, long_text = "one two three four five six seven eight nine ten";
  for (const char* w : {"a", " b", " c", " d", " e"}) five += w;
  ASSERT_EQ(tok.encode(five).size(), 5u);
  std::string six = five + " f";
  ASSERT_EQ(tok.encode(six).size(), 6u);
  const auto n_long = static_cast<int64_t>(tok.encode(long_text).size());
  const std::string path = dir_.write("len.jsonl", json{{"prompt", five}}.dump() + "\n" + json{{"prompt", six}}.dump() +
                                                        "\n" + json{{"prompt", long_text}}.dump() + "\n");
  {
    const PromptDataset ds = load_prompt_dataset({path}, encoder(n_long));
    EXPECT_EQ(ds.rows.size(), 2u) << "5 tokens dropped, 6 and prompt_length kept";
    EXPECT_EQ(ds.stats.files[0].too_short, 1);
    EXPECT_EQ(ds.stats.files[0].too_long, 0);
  }
  const PromptDataset ds = load_prompt_dataset({path}, encoder(n_long - 1));
  EXPECT_EQ(ds.rows.size(), 1u);
  EXPECT_EQ(ds.stats.files[0].too_long, 1);
  EXPECT_EQ(ds.stats.dropped_by_length(), 2);
}

TEST_F(PipelineDataEncoding, MalformedRowsAreCountedWithTheirLines) {
  const std::string good = json{{"messages", json::parse(user_messages("Good question here?"))}, {"id", 1}}.dump();
  const std::string path = dir_.write("bad.jsonl", good + "\n" +                                    // 1
                                                       "{\"messages\": [\n" +                        // 2 bad JSON
                                                       "\n" +                                        // 3 blank
                                                       "{\"id\": 4, \"text\": \"no prompt\"}\n" +    // 4
                                                       "{\"messages\": {\"role\": \"user\"}}\n" +    // 5 not a list
                                                       "{\"messages\": [{\"role\": \"user\"}]}\n" +  // 6 no content
                                                       "{\"messages\": \"[not json\"}\n" +           // 7
                                                       "[1, 2]\n" +                                  // 8 not an object
                                                       good + "\n");                                 // 9
  const PromptDataset ds = load_prompt_dataset({path}, encoder());
  EXPECT_EQ(ds.rows.size(), 2u);
  ASSERT_EQ(ds.stats.files.size(), 1u);
  const auto& f = ds.stats.files[0];
  EXPECT_EQ(f.rows, 8);
  EXPECT_EQ(f.malformed, 6);
  EXPECT_EQ(f.kept, 2);
  ASSERT_EQ(f.problems.size(), 5u) << "the first five are named";
  EXPECT_EQ(f.problems[0].rfind("line 2: bad JSON", 0), 0u) << f.problems[0];
  EXPECT_EQ(f.problems[1].rfind("line 4: the row has neither", 0), 0u) << f.problems[1];
  EXPECT_EQ(f.problems[2].rfind("line 5: ", 0), 0u) << f.problems[2];
  EXPECT_EQ(f.problems[3].rfind("line 6: \"messages\"[0]", 0), 0u) << f.problems[3];
  EXPECT_EQ(f.problems[4].rfind("line 7: \"messages\" is a string but not JSON", 0), 0u) << f.problems[4];
  EXPECT_EQ(ds.rows[1].origin, path + ":9");
  EXPECT_EQ(ds.rows[0].fields["id"], 1) << "other columns are kept";
  EXPECT_EQ(ds.rows[0].fields["domain"], "math_rule");

  // A file with no usable row is an error naming it (and why).
  const std::string none = dir_.write("none.jsonl", "{\"text\": 1}\n{\"prompt\": \"hi\"}\n");
  const std::string e = error_of([&] { load_prompt_dataset({none}, encoder()); });
  EXPECT_NE(e.find("none.jsonl: no usable rows"), std::string::npos) << e;
  EXPECT_NE(e.find("1 malformed, 1 with <= 5 tokens"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { load_prompt_dataset({dir_.path() + "/absent.jsonl"}, encoder()); }).find("absent.jsonl"),
            std::string::npos);
}

// ---- the pipeline's data from a config ----

class PipelineDataRlvr : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_TOKENIZER();
    std::string math, code;
    for (int i = 0; i < 12; ++i) {
      math += json{{"id", "m" + std::to_string(i)}, {"messages", user_messages("What is " + std::to_string(i) + " + 1?")},
                   {"tag", "arith"}, {"ground_truth", std::to_string(i + 1)}}.dump() + "\n";
      code += json{{"id", "c" + std::to_string(i)}, {"prompt", "Write a function number " + std::to_string(i) + " please."},
                   {"tag", "py"}}.dump() + "\n";
    }
    code += json{{"id", "judge"}, {"prompt", "Rate this answer for me now."}, {"domain", "llm_judge"}}.dump() + "\n";
    files_ = {dir_.write("math.jsonl", math), dir_.write("code.jsonl", code)};
    c_.seed = 5;
    c_.prompt_length = 64;
    c_.rollout_batch_size = 10;
    roll::config::DataArguments da;
    da.file_name = files_;
    da.domain_interleave_probs = {{"math_rule", 0.3}, {"code_sandbox", 0.7}};
    da.messages = "messages";
    c_.actor_train.data_args = da;
    roll::config::RewardConfig math_reward, code_reward;
    math_reward.worker.tag_included = {"arith"};
    code_reward.worker.tag_included = {"py"};
    c_.rewards = {{"math_rule", math_reward}, {"code_sandbox", code_reward}};
  }
  RlvrPromptData load() { return RlvrPromptData::load(c_, roll::model::default_tokenizer_dir()); }

  TempConfigDir dir_;
  std::vector<std::string> files_;
  roll::config::PipelineConfig c_;
};

TEST_F(PipelineDataRlvr, DomainsInYamlOrderWithPerStepCounts) {
  RlvrPromptData data = load();
  ASSERT_EQ(data.domains().size(), 2u);
  EXPECT_EQ(data.domains()[0].domain, "math_rule");
  EXPECT_EQ(data.domains()[0].batch_size, 3);  // int(0.3 * 10)
  EXPECT_EQ(data.domains()[0].rows.size(), 12u);
  EXPECT_EQ(data.domains()[1].domain, "code_sandbox");
  EXPECT_EQ(data.domains()[1].batch_size, 7);  // the remainder
  EXPECT_EQ(data.domains()[1].rows.size(), 12u) << "the llm_judge row is not in domain_interleave_probs";

  roll::Batch b = data.next_batch("code_sandbox");
  ASSERT_EQ(b.size(), 7);
  EXPECT_EQ(b.tensor("input_ids").sizes(), (at::IntArrayRef{7, 64}));
  for (int64_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b.get_string("domain", i), "code_sandbox");
    EXPECT_EQ(b.get_string("tag", i), "py");
  }
  EXPECT_FALSE(b.has_column("ground_truth")) << "no code row has one";
  roll::Batch m = data.next_batch("math_rule");
  EXPECT_EQ(m.size(), 3);
  EXPECT_EQ(m.get_string("domain", 0), "math_rule");
  EXPECT_NE(error_of([&] { data.next_batch("nope"); }).find("math_rule, code_sandbox"), std::string::npos);
}

TEST_F(PipelineDataRlvr, DomainBatchMustBeSmallerThanItsDataset) {
  c_.rollout_batch_size = 20;  // code_sandbox takes 14 of 12 rows
  std::string e = error_of([&] { load(); });
  EXPECT_NE(e.find("domain 'code_sandbox' takes 14 prompts per step"), std::string::npos) << e;
  EXPECT_NE(e.find("only 12 rows"), std::string::npos) << e;
  c_.rollout_batch_size = 10;
  c_.actor_train.data_args->domain_interleave_probs = {{"math_rule", 0.5}, {"llm", 0.5}};
  e = error_of([&] { load(); });
  EXPECT_NE(e.find("domain 'llm' has no training rows"), std::string::npos) << e;
  EXPECT_NE(e.find("code_sandbox: 12"), std::string::npos) << "the domains found are listed: " << e;
}

TEST_F(PipelineDataRlvr, ResumeDrawsTheSamePrompts) {
  auto ids = [](const roll::Batch& b) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < b.size(); ++i) out.push_back(b.get_string("id", i));
    return out;
  };
  RlvrPromptData run = load();
  for (int step = 0; step < 3; ++step) run.next_batch("math_rule"), run.next_batch("code_sandbox");
  const json state = run.state();
  EXPECT_EQ(state["scheduler_state_math_rule"]["dataset_iter_count"], 9);
  EXPECT_EQ(state["scheduler_state_code_sandbox"]["dataset_iter_count"], 21) << "crossed an epoch of 12";
  std::vector<std::vector<std::string>> expected;
  for (int step = 0; step < 3; ++step) expected.push_back(ids(run.next_batch("math_rule"))), expected.push_back(ids(run.next_batch("code_sandbox")));

  RlvrPromptData resumed = load();
  resumed.restore(json::parse(state.dump()));
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(ids(resumed.next_batch("math_rule")), expected[2 * step]);
    EXPECT_EQ(ids(resumed.next_batch("code_sandbox")), expected[2 * step + 1]);
  }
  // Each epoch uses every row once.
  RlvrPromptData fresh = load();
  std::set<std::string> epoch;
  for (const auto& id : ids(fresh.next_batch("math_rule", 12))) epoch.insert(id);
  EXPECT_EQ(epoch.size(), 12u);
}

TEST_F(PipelineDataRlvr, ValidationHasEveryRowInFileOrder) {
  roll::config::WorkerConfig val;
  roll::config::DataArguments vda;
  vda.file_name = {files_[1]};
  val.data_args = vda;
  c_.validation = val;
  RlvrPromptData data = load();
  ASSERT_TRUE(data.has_validation());
  roll::Batch v = data.validation_batch();
  ASSERT_EQ(v.size(), 13);
  EXPECT_EQ(v.get_string("id", 0), "c0");
  EXPECT_EQ(v.get_string("id", 12), "judge");
  EXPECT_EQ(v.get_string("domain", 12), "llm_judge");
  EXPECT_EQ(v.get_string("domain", 0), "code_sandbox");
}

// ---- synthetic data ----

namespace {

// "What is 12 * 7? Put ..." -> (12, '*', 7), parsed independently of the generator.
struct Problem {
  int64_t a, b;
  char op;
};
Problem parse_problem(const std::string& content) {
  static const std::regex re(R"((\d+) ([-+*]) (\d+)[?.] Put your final answer within \\boxed\{\}\.$)");
  std::smatch m;
  if (!std::regex_search(content, m, re)) ADD_FAILURE() << "unexpected problem text: " << content;
  return {std::stoll(m[1]), std::stoll(m[3]), m[2].str()[0]};
}

// "12*7": the operation, whatever the phrasing.
std::string operation_of(const nlohmann::ordered_json& row) {
  const Problem p = parse_problem(row["messages"][0]["content"]);
  return std::to_string(p.a) + p.op + std::to_string(p.b);
}

std::string problem_key(const nlohmann::ordered_json& row) {
  return row["messages"][0]["content"].get<std::string>();
}

}  // namespace

TEST(PipelineDataSynthetic, ArithmeticAnswersAreRightAndDigitsBounded) {
  for (int digits : {1, 3, 9}) {
    SyntheticDataOptions o;
    o.seed = 17;
    o.n = digits == 1 ? 40 : 300;
    o.digits = digits;
    const auto rows = arithmetic_rows(o);
    ASSERT_EQ(rows.size(), static_cast<size_t>(o.n));
    std::set<std::string> problems;
    for (const auto& row : rows) {
      EXPECT_EQ(row["tag"], "arithmetic");
      EXPECT_EQ(row["domain"], "math_rule");
      ASSERT_EQ(row["messages"].size(), 1u);
      EXPECT_EQ(row["messages"][0]["role"], "user");
      const Problem p = parse_problem(row["messages"][0]["content"]);
      const __int128 a = p.a, b = p.b;
      const __int128 want = p.op == '+' ? a + b : p.op == '-' ? a - b : a * b;
      EXPECT_EQ(row["ground_truth"], std::to_string(static_cast<long long>(want))) << row.dump();
      int64_t limit = 1;
      for (int i = 0; i < digits; ++i) limit *= 10;
      EXPECT_LT(p.a, limit);
      EXPECT_LT(p.b, limit);
      problems.insert(operation_of(row));
    }
    EXPECT_EQ(problems.size(), rows.size()) << "problems are distinct";
  }
  SyntheticDataOptions too_many;
  too_many.digits = 1;
  too_many.n = 400;  // 300 one-digit problems exist in all
  EXPECT_NE(error_of([&] { arithmetic_rows(too_many); }).find("distinct"), std::string::npos);
  too_many.split = "dev";
  EXPECT_NE(error_of([&] { arithmetic_rows(too_many); }).find("--split"), std::string::npos);
}

TEST(PipelineDataSynthetic, DeterministicPerSeedAndSplitsDisjoint) {
  for (auto generate : {arithmetic_rows, code_rows}) {
    SyntheticDataOptions o;
    o.seed = 1;
    o.n = 200;
    const auto a = generate(o), b = generate(o);
    EXPECT_EQ(a, b) << "same seed, same rows";
    o.seed = 2;
    EXPECT_NE(generate(o), a);

    std::set<std::string> train, test;
    for (uint64_t seed : {1, 2, 3}) {
      o.seed = seed;
      o.split = "train";
      for (const auto& r : generate(o)) train.insert(problem_key(r));
      o.split = "test";
      for (const auto& r : generate(o)) test.insert(problem_key(r));
    }
    EXPECT_GT(test.size(), 50u);
    for (const auto& t : test) EXPECT_FALSE(train.count(t)) << "in both splits: " << t;
  }
}

TEST(PipelineDataSynthetic, ArithmeticSplitIsByProblemNotPhrasing) {
  SyntheticDataOptions o;
  o.n = 300;
  o.seed = 4;
  std::set<std::string> train;
  for (const auto& r : arithmetic_rows(o)) train.insert(operation_of(r));
  o.split = "test";
  for (const auto& r : arithmetic_rows(o)) EXPECT_FALSE(train.count(operation_of(r))) << operation_of(r);
}

TEST(PipelineDataSynthetic, GeneratedRowsLoadAsRlvrPrompts) {
  REQUIRE_TOKENIZER();
  TempConfigDir dir;
  SyntheticDataOptions o;
  o.n = 30;
  write_jsonl(dir.path() + "/a.jsonl", arithmetic_rows(o));
  write_jsonl(dir.path() + "/c.jsonl", code_rows(o));
  PromptEncodingOptions eo;
  eo.prompt_length = 256;
  const PromptDataset ds = load_prompt_dataset({dir.path() + "/a.jsonl", dir.path() + "/c.jsonl"},
                                               PromptEncoder(roll::model::default_tokenizer_dir(), eo));
  EXPECT_EQ(ds.stats.kept(), 60) << "no row is malformed or too long";
  EXPECT_EQ(ds.rows[0].domain(), "math_rule");
  EXPECT_EQ(ds.rows[30].domain(), "code_sandbox");
}

TEST(PipelineDataSynthetic, CodeRowsHaveAssertCasesAndEveryTemplateAppears) {
  SyntheticDataOptions o;
  o.n = 600;
  o.seed = 9;
  std::set<std::string> families;
  for (const auto& row : code_rows(o)) {
    EXPECT_EQ(row["case_type"], "assert");
    EXPECT_EQ(row["domain"], "code_sandbox");
    EXPECT_EQ(row["tag"], "code");
    const json cases = json::parse(row["test_cases"].get<std::string>());
    ASSERT_TRUE(cases.is_array());
    ASSERT_EQ(cases.size(), 1u);
    const std::string asserts = cases[0]["assert_code"];
    EXPECT_EQ(std::count(asserts.begin(), asserts.end(), '\n'), 5);
    EXPECT_EQ(asserts.rfind("assert ", 0), 0u);
    EXPECT_NE(row["solution"].get<std::string>().find("def "), std::string::npos);
    families.insert(row["source"]);
  }
  EXPECT_GE(roll::pipeline::code_task_count(), 30);
  EXPECT_EQ(static_cast<int>(families.size()), roll::pipeline::code_task_count());
}

TEST(PipelineDataSynthetic, CodeReferenceSolutionsPassTheirTestsInTheSandbox) {
  const std::string reason = roll::reward::Sandbox::unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << "sandbox unavailable: " << reason;
  roll::reward::Sandbox sandbox;
  roll::reward::CodeRewardOptions ro;
  ro.timeout_s = 10;
  const roll::reward::CodeSandboxReward reward(sandbox, ro);
  // One row per template and split.
  std::map<std::string, nlohmann::ordered_json> picked;
  for (const char* split : {"train", "test"}) {
    SyntheticDataOptions o;
    o.n = 400;
    o.seed = 21;
    o.split = split;
    for (const auto& row : code_rows(o)) picked.emplace(row["source"].get<std::string>() + "/" + split, row);
  }
  EXPECT_GE(picked.size(), 60u) << "every template in train, most in test";
  for (const auto& [key, row] : picked) {
    const std::string response = "```python\n" + row["solution"].get<std::string>() + "```";
    const auto r = reward.compute(response, json(row["test_cases"].get<std::string>()), "assert");
    EXPECT_EQ(r.score, 1.0) << key << ": " << r.error_message << " " << r.error << "\n" << row.dump(2);
  }
  // The cases can fail: a solution that returns None passes none of them.
  const auto& any = picked.begin()->second;
  std::string wrong = any["solution"];
  wrong = wrong.substr(0, wrong.find('\n')) + "\n    return None\n";
  EXPECT_EQ(reward.compute("```python\n" + wrong + "```", json(any["test_cases"].get<std::string>()), "assert").score, 0.0);
}

// Distillation rows are the arithmetic problems of the same options: the user turn as question,
// \boxed{ground truth} as answer.
TEST(PipelineDataSynthetic, DistillRowsAreTheArithmeticProblemsWithBoxedAnswers) {
  SyntheticDataOptions o;
  o.seed = 4;
  o.n = 20;
  o.split = "test";
  const auto problems = arithmetic_rows(o);
  const auto rows = distill_rows(o);
  ASSERT_EQ(rows.size(), problems.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["question"], problems[i]["messages"].back()["content"]);
    EXPECT_EQ(rows[i]["answer"].get<std::string>(), "\\boxed{" + problems[i]["ground_truth"].get<std::string>() + "}");
    EXPECT_EQ(rows[i]["tag"], "distill");
  }
}

TEST(PipelineDataSynthetic, PreferencePairsChooseTheRightSumAndSplitsAreDisjoint) {
  const std::regex instruction_re(R"(What is (\d+) \+ (\d+)\?)");
  const std::regex maybe_re(R"(Maybe (\d+)\?)");
  SyntheticDataOptions o;
  o.seed = 1;
  o.n = 300;
  const auto rows = preference_rows(o);
  ASSERT_EQ(rows.size(), 300u);
  EXPECT_EQ(preference_rows(o), rows) << "same seed, same rows";
  o.seed = 2;
  EXPECT_NE(preference_rows(o), rows);

  std::set<std::string> instructions, rejected_styles;
  for (const auto& row : rows) {
    std::vector<std::string> keys;
    for (auto it = row.begin(); it != row.end(); ++it) keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"instruction", "chosen", "rejected", "tag"}));
    EXPECT_EQ(row["tag"], "preference");
    const std::string instruction = row["instruction"], chosen = row["chosen"], rejected = row["rejected"];
    std::smatch m;
    ASSERT_TRUE(std::regex_match(instruction, m, instruction_re)) << instruction;
    const int64_t a = std::stoll(m[1]), b = std::stoll(m[2]);
    EXPECT_LE(a, 99);
    EXPECT_LE(b, 99);
    EXPECT_EQ(chosen, "The answer is " + std::to_string(a + b) + ".");
    EXPECT_NE(chosen, rejected);
    if (std::regex_match(rejected, m, maybe_re)) {
      EXPECT_NE(std::stoll(m[1]), a + b) << "the rejected sum is wrong: " << row.dump();
      rejected_styles.insert("maybe");
    } else {
      EXPECT_TRUE(rejected == "I don't know." || rejected == "No idea, sorry.") << rejected;
      rejected_styles.insert(rejected);
    }
    instructions.insert(instruction);
  }
  EXPECT_EQ(instructions.size(), rows.size()) << "problems are distinct";
  EXPECT_EQ(rejected_styles.size(), 3u) << "every rejected style appears";

  std::set<std::string> train, test;
  for (uint64_t seed : {1, 2, 3}) {
    o.seed = seed;
    o.split = "train";
    for (const auto& r : preference_rows(o)) train.insert(r["instruction"].get<std::string>());
    o.split = "test";
    for (const auto& r : preference_rows(o)) test.insert(r["instruction"].get<std::string>());
  }
  EXPECT_GT(test.size(), 50u);
  for (const auto& t : test) EXPECT_FALSE(train.count(t)) << "in both splits: " << t;

  o.n = 3000;  // about 2040 test problems exist in all
  EXPECT_NE(error_of([&] { preference_rows(o); }).find("distinct"), std::string::npos);
  o.split = "dev";
  EXPECT_NE(error_of([&] { preference_rows(o); }).find("--split"), std::string::npos);
}
