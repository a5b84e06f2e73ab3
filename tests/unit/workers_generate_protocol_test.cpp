// The generate request and its answer on the wire (workers/generate_protocol.h): every field of
// both types survives the round trip, and a malformed message is refused naming the field.
#include <gtest/gtest.h>

#include <string>

#include "roll/core/error.h"
#include "roll/core/generation.h"
#include "roll/workers/generate_protocol.h"

using namespace roll;
using json = nlohmann::json;

namespace {

// Every field away from its default, so that a field the codec drops shows up as a difference.
GenerationRequest full_request() {
  GenerationRequest r;
  r.request_id = "train-7";
  r.prompt_token_ids = {1, 151644, 42, 0};
  r.params.temperature = 0.7;
  r.params.top_p = 0.9;
  r.params.top_k = 50;
  r.params.repetition_penalty = 1.05;
  r.params.n = 4;
  r.params.max_new_tokens = 123;
  r.params.seed = (uint64_t{1} << 63) + 5;  // above int64's range
  r.params.stop_token_ids = {151645, 151643};
  r.params.stop = {"</answer>", "\n\n"};
  r.params.include_stop_str_in_output = true;
  return r;
}

RequestOutput full_output() {
  RequestOutput o;
  o.request_id = "train-7";
  o.prompt_token_ids = {1, 151644, 42, 0};
  o.cached_prompt_tokens = 3;
  // The first sample straddles a weight update; a version above int32's range must survive.
  o.samples.push_back(
      {{5, 6, 151645}, {-0.5f, -1.25f, -0.125f}, FinishReason::stop, "</answer>", "ab</answer>", {2, 3, 3}});
  o.samples.push_back({{7}, {-3.0f}, FinishReason::length, "", "c", {(int64_t{1} << 40) + 1}});
  o.samples.push_back({{}, {}, FinishReason::abort, "", "", {}});
  return o;
}

void expect_equal(const SamplingParams& a, const SamplingParams& b) {
  EXPECT_EQ(a.temperature, b.temperature);
  EXPECT_EQ(a.top_p, b.top_p);
  EXPECT_EQ(a.top_k, b.top_k);
  EXPECT_EQ(a.repetition_penalty, b.repetition_penalty);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.max_new_tokens, b.max_new_tokens);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.stop_token_ids, b.stop_token_ids);
  EXPECT_EQ(a.stop, b.stop);
  EXPECT_EQ(a.include_stop_str_in_output, b.include_stop_str_in_output);
}

std::string error_of(const json& j) {
  try {
    workers::output_from_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WorkersGenerateProtocol, ARequestRoundTripsEveryField) {
  const GenerationRequest r = full_request();
  // Through text, as it travels.
  const GenerationRequest back = workers::request_from_json(json::parse(workers::request_to_json(r).dump()));
  EXPECT_EQ(back.request_id, r.request_id);
  EXPECT_EQ(back.prompt_token_ids, r.prompt_token_ids);
  expect_equal(back.params, r.params);

  workers::RoutedRequest routed{r, "env-3"};
  const workers::RoutedRequest rb = workers::routed_request_from_json(workers::routed_request_to_json(routed));
  EXPECT_EQ(rb.affinity_key, "env-3");
  EXPECT_EQ(rb.request.prompt_token_ids, r.prompt_token_ids);
  expect_equal(rb.request.params, r.params);
  // No key: the request id keeps the request's samples together.
  EXPECT_EQ(workers::routed_request_from_json(workers::request_to_json(r)).affinity_key, "train-7");
}

TEST(WorkersGenerateProtocol, AnUnsetSeedStaysUnset) {
  GenerationRequest r = full_request();
  r.params.seed.reset();
  EXPECT_FALSE(workers::request_from_json(workers::request_to_json(r)).params.seed.has_value());
}

TEST(WorkersGenerateProtocol, AnAnswerRoundTripsEveryField) {
  const RequestOutput o = full_output();
  const RequestOutput back = workers::output_from_json(json::parse(workers::output_to_json(o).dump()));
  EXPECT_EQ(back.request_id, o.request_id);
  EXPECT_EQ(back.prompt_token_ids, o.prompt_token_ids);
  EXPECT_EQ(back.cached_prompt_tokens, o.cached_prompt_tokens);
  ASSERT_EQ(back.samples.size(), o.samples.size());
  EXPECT_EQ(back.samples[0].weight_versions, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(back.samples[1].weight_versions, (std::vector<int64_t>{(int64_t{1} << 40) + 1}));
  for (size_t i = 0; i < o.samples.size(); ++i) {
    EXPECT_EQ(back.samples[i].token_ids, o.samples[i].token_ids) << i;
    EXPECT_EQ(back.samples[i].logprobs, o.samples[i].logprobs) << i;  // float -> decimal -> float is exact
    EXPECT_EQ(back.samples[i].weight_versions, o.samples[i].weight_versions) << i;
    EXPECT_EQ(back.samples[i].finish_reason, o.samples[i].finish_reason) << i;
    EXPECT_EQ(back.samples[i].stop_reason, o.samples[i].stop_reason) << i;
    EXPECT_EQ(back.samples[i].text, o.samples[i].text) << i;
  }
}

TEST(WorkersGenerateProtocol, AnAnswerWithoutWeightVersionsDecodesToNone) {
  json old = workers::output_to_json(full_output());
  old.erase("output_weight_versions");  // what a peer from before the field sends
  const RequestOutput back = workers::output_from_json(old);
  ASSERT_EQ(back.samples.size(), 3u);
  EXPECT_EQ(back.samples[0].token_ids, (std::vector<int32_t>{5, 6, 151645}));
  for (const auto& s : back.samples) EXPECT_TRUE(s.weight_versions.empty());
  old["output_weight_versions"] = nullptr;
  EXPECT_TRUE(workers::output_from_json(old).samples[0].weight_versions.empty());
}

TEST(WorkersGenerateProtocol, AnAbortNamesItsRequest) {
  EXPECT_EQ(workers::abort_from_json(workers::abort_to_json("val-2")), "val-2");
  EXPECT_THROW(workers::abort_from_json(json::object()), Error);
}

TEST(WorkersGenerateProtocol, ANeverSentRequestAnswersAbortForEachSample) {
  const RequestOutput o = aborted_output("train-1", 3);
  EXPECT_EQ(o.request_id, "train-1");
  ASSERT_EQ(o.samples.size(), 3u);
  for (const auto& s : o.samples) {
    EXPECT_EQ(s.finish_reason, FinishReason::abort);
    EXPECT_TRUE(s.token_ids.empty());
  }
}

TEST(WorkersGenerateProtocol, MalformedMessagesNameTheField) {
  json ok = workers::output_to_json(full_output());
  EXPECT_EQ(error_of(ok), "");
  json no_rid = ok;
  no_rid.erase("rid");
  EXPECT_NE(error_of(no_rid).find("'rid'"), std::string::npos) << error_of(no_rid);
  json short_logprobs = ok;
  short_logprobs["output_logprobs"].erase(0);
  EXPECT_NE(error_of(short_logprobs).find("one per sample"), std::string::npos) << error_of(short_logprobs);
  json bad_reason = ok;
  bad_reason["finish_reasons"][0] = "eos";
  EXPECT_NE(error_of(bad_reason).find("'eos'"), std::string::npos) << error_of(bad_reason);
  json bad_ids = ok;
  bad_ids["output_token_ids"][0][0] = "x";
  EXPECT_NE(error_of(bad_ids).find("output_token_ids"), std::string::npos) << error_of(bad_ids);
  json bad_versions = ok;
  bad_versions["output_weight_versions"][0][1] = "v3";
  EXPECT_NE(error_of(bad_versions).find("output_weight_versions"), std::string::npos) << error_of(bad_versions);
  json flat_versions = ok;
  flat_versions["output_weight_versions"] = 3;
  EXPECT_NE(error_of(flat_versions).find("output_weight_versions"), std::string::npos) << error_of(flat_versions);
  json few_versions = ok;
  few_versions["output_weight_versions"].erase(0);
  EXPECT_NE(error_of(few_versions).find("one per sample"), std::string::npos) << error_of(few_versions);
  json short_versions = ok;
  short_versions["output_weight_versions"][0].erase(0);
  EXPECT_NE(error_of(short_versions).find("one per token"), std::string::npos) << error_of(short_versions);

  json req = workers::request_to_json(full_request());
  req["sampling_params"]["top_k"] = "many";
  try {
    workers::request_from_json(req);
    FAIL() << "a string top_k was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sampling_params.top_k"), std::string::npos) << e.what();
  }
  json no_ids = workers::request_to_json(full_request());
  no_ids.erase("input_ids");
  EXPECT_THROW(workers::request_from_json(no_ids), Error);
}

}  // namespace
