// `roll generate` end to end: a `roll model init` directory (real Qwen tokenizer and chat template),
// a JSONL of prompts with a bad line among good ones, JSONL out in input order, reproducible with a seed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config_test_util.h"
#include "read_jsonl.h"
#include "roll/model/model_init.h"

namespace fs = std::filesystem;
using roll::testing::read_jsonl;
using roll::testing::TempConfigDir;

namespace {

int run(const std::string& cmd) {
  const int rc = std::system((cmd + " > /dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST(EngineGenerate, JsonlInJsonlOutWithPerLineErrors) {
  if (!fs::exists(fs::path(roll::model::default_tokenizer_dir()) / "tokenizer.json"))
    GTEST_SKIP() << "tokenizer assets missing: run scripts/setup";
  TempConfigDir dir;
  const std::string roll = ROLL_BINARY, model = dir.path() + "/model";
  ASSERT_EQ(run(roll + " model init --preset tiny --init-std 0.5 --out " + model), 0);
  const std::string in = dir.write("prompts.jsonl",
                                   "{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}]}\n"
                                   "{\"id\": 7, \"prompt\": \"Tell me a story.\"}\n"
                                   "{\"id\": \"bad\", \"text\": \"no messages\"}\n"
                                   "\n"
                                   "{\"prompt\": \"Hello\"}\n"
                                   "{\"id\": \"ids\", \"prompt_token_ids\": [11, 12, 13]}\n"
                                   "{\"id\": \"bad ids\", \"prompt_token_ids\": [11, \"x\"]}\n");
  const std::string args = " generate -m " + model + " -i " + in + " --max-new-tokens 5 --temperature 0.8 --n 2 "
                           "--seed 3 --threads 2 --dtype fp32 -o ";
  EXPECT_EQ(run(roll + args + dir.path() + "/out1.jsonl"), 1) << "a bad line makes the exit code 1";
  EXPECT_EQ(run(roll + args + dir.path() + "/out2.jsonl"), 1);
  auto out = read_jsonl(dir.path() + "/out1.jsonl");
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0]["id"], "a");
  EXPECT_EQ(out[1]["id"], 7);
  EXPECT_EQ(out[2]["id"], "bad");
  EXPECT_TRUE(out[2].contains("error"));
  EXPECT_NE(out[2]["error"].get<std::string>().find("prompts.jsonl:3"), std::string::npos) << out[2]["error"];
  EXPECT_EQ(out[3]["id"], 5) << "lines without an id get their line number";
  ASSERT_TRUE(out[4].contains("outputs")) << out[4];
  EXPECT_EQ(out[4]["prompt_tokens"], 3) << "token ids go in as they are, without the chat template";
  EXPECT_NE(out[5].value("error", "").find("not an integer"), std::string::npos) << out[5];
  for (int i : {0, 1, 3}) {
    ASSERT_TRUE(out[i].contains("outputs")) << out[i];
    ASSERT_EQ(out[i]["outputs"].size(), 2u);
    EXPECT_GT(out[i]["prompt_tokens"].get<int>(), 5) << "chat template applied";
    for (const auto& s : out[i]["outputs"]) {
      EXPECT_GE(s["token_ids"].size(), 1u);
      EXPECT_LE(s["token_ids"].size(), 5u);
      EXPECT_EQ(s["logprobs"].size(), s["token_ids"].size());
      for (const auto& lp : s["logprobs"]) EXPECT_LE(lp.get<double>(), 0.0);
      const std::string reason = s["finish_reason"];
      EXPECT_TRUE(reason == "stop" || reason == "length") << reason;
    }
  }
  EXPECT_EQ(out, read_jsonl(dir.path() + "/out2.jsonl")) << "same seed, same output";
  EXPECT_NE(run(roll + " generate -m " + dir.path() + "/missing -i " + in + " -o " + dir.path() + "/x.jsonl"), 0);
}
