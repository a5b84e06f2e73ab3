// Batch (ROLL's DataProto): vectors of ROLL's tests/distributed/scheduler/test_protocol.py and
// test_protocol_padding.py (tests/), plus serialization round trips and corrupt-input handling.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "roll/core/batch.h"
#include "roll/core/batch_io.h"
#include "roll/core/error.h"

namespace roll {
namespace {

using nlohmann::json;

// test_protocol.py's fixture: a [5,2], b [5,3], c = [{"id": i}].
Batch make_proto() {
  Batch b;
  b.set_tensor("a", at::randn({5, 2}));
  b.set_tensor("b", at::randn({5, 3}));
  NonTensorColumn c;
  for (int i = 0; i < 5; ++i) c.push_back(json{{"id", i}});
  b.set_column("c", std::move(c));
  return b;
}

// test_protocol.py's group_by fixture.
Batch make_sample() {
  Batch b;
  b.set_tensor("group1", at::tensor({0, 0, 1, 1}, at::kLong));
  b.set_tensor("group2", at::tensor({10, 20, 20, 30}, at::kLong));
  b.set_column("category", {"A", "B", "A", "B"});
  b.set_column("flag", {"1", "2", "3", "4"});
  return b;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no roll::Error thrown>";
}

bool same_bits(const at::Tensor& x, const at::Tensor& y) {
  if (x.scalar_type() != y.scalar_type() || !x.sizes().equals(y.sizes())) return false;
  at::Tensor a = x.contiguous(), b = y.contiguous();
  return a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

// ---------------------------------------------------------------------------------------------- test_protocol

TEST(CoreBatch, Initialization) {
  Batch dp = make_proto();
  EXPECT_EQ(dp.size(), 5);
  EXPECT_TRUE(dp.has_tensor("a"));
  EXPECT_TRUE(dp.has_column("c"));
  EXPECT_EQ(dp.cell("c", 3)["id"], 3);
  EXPECT_EQ(dp.tensor_keys(), (std::vector<std::string>{"a", "b"}));
}

TEST(CoreBatch, GetItemSingleRow) {
  Batch one = make_proto().slice(0, 1);
  EXPECT_EQ(one.size(), 1);
  EXPECT_EQ(one.tensor("a").size(0), 1);
  EXPECT_EQ(one.cell("c", 0)["id"], 0);
}

TEST(CoreBatch, Select) {
  Batch dp = make_proto().select({"a"}, {"c"});
  EXPECT_TRUE(dp.has_tensor("a"));
  EXPECT_FALSE(dp.has_tensor("b"));
  EXPECT_TRUE(dp.has_column("c"));
  EXPECT_EQ(dp.size(), 5);
  std::string msg = error_of([&] { make_proto().select({"zz"}, {}); });
  EXPECT_NE(msg.find("'zz'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a, b"), std::string::npos) << msg;
}

TEST(CoreBatch, Chunk) {
  Batch dp = make_proto();
  auto chunks = dp.chunk(5);
  ASSERT_EQ(chunks.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(chunks[i].size(), 1);
    EXPECT_TRUE(at::equal(chunks[i].tensor("a")[0], dp.tensor("a")[i]));
    EXPECT_EQ(chunks[i].cell("c", 0)["id"], i);
  }
  // np.array_split sizes, as ROLL's chunk: the first B % n parts get one more row.
  auto uneven = dp.chunk(2);
  EXPECT_EQ(uneven[0].size(), 3);
  EXPECT_EQ(uneven[1].size(), 2);
  // Chunks own their tensors.
  chunks[0].tensor("a").fill_(123.0);
  EXPECT_FALSE(at::equal(chunks[0].tensor("a")[0], dp.tensor("a")[0]));
  std::string msg = error_of([&] { dp.chunk(6); });
  EXPECT_NE(msg.find("5 rows into 6 chunks"), std::string::npos) << msg;
  EXPECT_EQ(Batch().chunk(3).size(), 3u);
}

TEST(CoreBatch, Concat) {
  Batch dp = make_proto();
  Batch cat = Batch::concat({dp, dp});
  EXPECT_EQ(cat.size(), 10);
  EXPECT_TRUE(at::equal(cat.tensor("b").narrow(0, 5, 5), dp.tensor("b")));
  EXPECT_EQ(cat.column("c").size(), 10u);
  EXPECT_EQ(cat.cell("c", 7)["id"], 2);
}

TEST(CoreBatch, ConcatKeyMismatchNamesKeys) {
  Batch a = make_proto();
  Batch b = make_proto();
  b.erase_tensor("b");
  std::string msg = error_of([&] { Batch::concat({a, b}); });
  EXPECT_NE(msg.find("part 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[a, b]"), std::string::npos) << msg;
}

TEST(CoreBatch, Rename) {
  Batch dp = make_proto();
  dp.rename("a", "alpha");
  EXPECT_TRUE(dp.has_tensor("alpha"));
  EXPECT_FALSE(dp.has_tensor("a"));
  EXPECT_NE(error_of([&] { dp.rename("b", "c"); }).find("'c' exists"), std::string::npos);
  EXPECT_NE(error_of([&] { dp.rename("nope", "x"); }).find("'nope'"), std::string::npos);
}

TEST(CoreBatch, GroupBySingleNonTensorKey) {
  auto groups = make_sample().group_by({"category"});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups.entries[0].first, "A");
  EXPECT_EQ(groups.entries[1].first, "B");
  EXPECT_EQ(groups.at("A").size(), 2);
  EXPECT_TRUE(at::equal(groups.at("A").tensor("group2"), at::tensor({10, 20}, at::kLong)));
  EXPECT_EQ(groups.at("B").get_string("flag", 1), "4");
}

TEST(CoreBatch, GroupByMultiKey) {
  auto groups = make_sample().group_by({"group1", "category"});
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_TRUE(groups.contains("0|A"));
  EXPECT_TRUE(groups.contains("1|B"));
  EXPECT_EQ(groups.at("1|A").get_string("flag", 0), "3");
}

TEST(CoreBatch, GroupByMixedTypeKeys) {
  auto groups = make_sample().group_by({"group2", "flag"});
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_TRUE(groups.contains("20|2"));
  EXPECT_TRUE(groups.contains("20|3"));
  auto by_value = make_sample().group_by({"group2"});
  EXPECT_EQ(by_value.at("20").size(), 2);
}

TEST(CoreBatch, GroupByInvalidKey) {
  std::string msg = error_of([] { make_sample().group_by({"invalid_key"}); });
  EXPECT_NE(msg.find("Grouping key 'invalid_key'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("group1, group2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("category, flag"), std::string::npos) << msg;
}

TEST(CoreBatch, GroupByAllSame) {
  Batch b;
  b.set_tensor("key", at::tensor({5, 5, 5}, at::kLong));
  b.set_column("category", {"1", "1", "1"});
  auto groups = b.group_by({"key", "category"});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups.entries[0].first, "5|1");
  EXPECT_EQ(groups.entries[0].second.size(), 3);
}

TEST(CoreBatch, GroupByStringForms) {
  // str() of numpy/Python values: floats keep ".0", bools are True/False, rows print as [1 2].
  Batch b;
  b.set_tensor("f", at::tensor({1.0f, 0.5f}));
  b.set_tensor("m", at::tensor({1, 0}).to(at::kBool));
  b.set_tensor("row", at::tensor({1, 2, 3, 4}, at::kLong).reshape({2, 2}));
  b.set_column("d", {1.0, 2});
  auto g = b.group_by({"f", "m", "row", "d"});
  EXPECT_TRUE(g.contains("1.0|True|[1 2]|1.0")) << g.entries[0].first;
  EXPECT_TRUE(g.contains("0.5|False|[3 4]|2")) << g.entries[1].first;
}

Batch with_meta(int64_t rows, json meta) {
  Batch b;
  b.set_tensor("x", at::randn({rows}));
  b.meta = std::move(meta);
  return b;
}

TEST(CoreBatch, ConcatGlobalKeysDict) {
  Batch dp0 = with_meta(3, {{"metrics", {{"acc", 0.8}, {"loss", {0.1, 0.2}}}}});
  Batch dp1 = with_meta(2, {{"metrics", {{"acc", 0.9}, {"loss", {0.15, 0.25}}}}});
  Batch merged = Batch::concat({dp0, dp1}, {"metrics"});
  EXPECT_EQ(merged.size(), 5);
  EXPECT_EQ(merged.meta["metrics"]["acc"], json::array({0.8, 0.9}));
  EXPECT_EQ(merged.meta["metrics"]["loss"], json::array({0.1, 0.2, 0.15, 0.25}));
}

TEST(CoreBatch, ConcatGlobalKeysScalar) {
  Batch merged = Batch::concat({with_meta(1, {{"lr", 1e-4}}), with_meta(1, {{"lr", 2e-4}})}, {"lr"});
  EXPECT_EQ(merged.meta["lr"], json::array({1e-4, 2e-4}));
}

TEST(CoreBatch, ConcatNonGlobalKeepsFirst) {
  Batch merged = Batch::concat({with_meta(1, {{"seed", 42}}), with_meta(1, {{"seed", 123}})});
  EXPECT_EQ(merged.meta["seed"], 42);
}

TEST(CoreBatch, ConcatDefaultGlobalKeyIsMetrics) {
  Batch merged = Batch::concat({with_meta(1, {{"metrics", {{"a", 1}}}}), with_meta(1, {{"metrics", {{"a", 2}}}})});
  EXPECT_EQ(merged.meta["metrics"]["a"], json::array({1, 2}));
}

TEST(CoreBatch, ConcatGlobalKeysMissingSubkeysAndReduce) {
  Batch dp0 = with_meta(2, {{"metrics", {{"acc", 0.8}, {"loss", {0.1, 0.2}}}}});
  Batch dp1 = with_meta(1, {{"metrics", {{"loss", {0.15}}}}});
  Batch dp2 = with_meta(2, {{"metrics", {{"acc", 0.9}, {"precision", {0.7, 0.75}}}}});
  Batch merged = Batch::concat({dp0, dp1, dp2}, {"metrics"});
  EXPECT_EQ(merged.size(), 5);
  const json& m = merged.meta["metrics"];
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m["loss"], json::array({0.1, 0.2, 0.15}));
  EXPECT_EQ(m["acc"], json::array({0.8, 0.9}));
  EXPECT_EQ(m["precision"], json::array({0.7, 0.75}));
  json reduced = reduce_metrics(m);
  EXPECT_NEAR(reduced["loss"].get<double>(), (0.1 + 0.2 + 0.15) / 3, 1e-12);
  EXPECT_NEAR(reduced["acc"].get<double>(), 0.85, 1e-12);
  EXPECT_NEAR(reduced["precision"].get<double>(), 0.725, 1e-12);
}

TEST(CoreBatch, ConcatGlobalKeyAbsentInFirstPart) {
  Batch merged = Batch::concat({with_meta(1, json::object()), with_meta(1, {{"metrics", {{"a", 2}}}})});
  EXPECT_EQ(merged.meta["metrics"]["a"], json::array({2}));
}

TEST(CoreBatch, ReduceMetrics) {
  json r = reduce_metrics({{"loss", {1.0, 2.0, 3.0}}, {"acc", 0.5}, {"nested", {{1, 2}, {3}}}, {"none", json::array()}});
  EXPECT_DOUBLE_EQ(r["loss"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["acc"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(r["nested"].get<double>(), 2.0);
  EXPECT_TRUE(std::isnan(r["none"].get<double>()));
  std::string msg = error_of([] { reduce_metrics({{"bad", {"x"}}}); });
  EXPECT_NE(msg.find("'bad'"), std::string::npos) << msg;
}

TEST(CoreBatch, CloneIndependence) {
  Batch dp = make_proto();
  dp.meta["k"] = {{"nested", 1}};
  Batch copy = dp.clone();
  for (const auto& key : dp.tensor_keys()) EXPECT_TRUE(at::equal(dp.tensor(key), copy.tensor(key)));
  EXPECT_EQ(dp.column("c"), copy.column("c"));
  EXPECT_EQ(dp.meta, copy.meta);
  copy.meta["new_key"] = "value";
  copy.meta["k"]["nested"] = 2;
  EXPECT_FALSE(dp.meta.contains("new_key"));
  EXPECT_EQ(dp.meta["k"]["nested"], 1);
  copy.tensor("a")[0].add_(100.0);
  EXPECT_FALSE(at::equal(dp.tensor("a"), copy.tensor("a")));
  copy.set_cell("c", 0, "changed");
  EXPECT_EQ(dp.cell("c", 0)["id"], 0);
}

// ---------------------------------------------------------------------------------------------- padding

Batch make_ids(int64_t rows) {
  Batch b;
  b.set_tensor("input_ids", at::randint(0, 1000, {rows, 10}, at::kLong));
  b.set_tensor("attention_mask", at::ones({rows, 10}));
  b.set_tensor("position_ids", at::arange(10).unsqueeze(0).repeat({rows, 1}));
  return b;
}

TEST(CoreBatch, PadWhenNotDivisible) {
  Batch b = make_ids(7);
  EXPECT_EQ(b.pad_to_divisor(4), 1);
  EXPECT_EQ(b.size(), 8);
}

TEST(CoreBatch, NoPadWhenDivisible) {
  Batch b = make_ids(8);
  at::Tensor before = b.tensor("input_ids");
  EXPECT_EQ(b.pad_to_divisor(4), 0);
  EXPECT_EQ(b.size(), 8);
  EXPECT_TRUE(b.tensor("input_ids").is_same(before));
}

TEST(CoreBatch, UnpadRestoresSize) {
  Batch original = make_ids(7);
  Batch b = original;
  const int64_t pad = b.pad_to_divisor(4);
  b.unpad(pad);
  EXPECT_EQ(b.size(), 7);
  EXPECT_TRUE(at::equal(b.tensor("input_ids"), original.tensor("input_ids")));
}

TEST(CoreBatch, PaddedRowsCopyLeadingRows) {
  Batch b = make_ids(3);
  b.set_column("uid", {"u0", "u1", "u2"});
  b.meta["global_step"] = 3;
  Batch original = b.clone();
  EXPECT_EQ(b.pad_to_divisor(4), 1);
  EXPECT_EQ(b.size(), 4);
  EXPECT_EQ(b.tensor("input_ids").size(0), 4);
  EXPECT_EQ(b.tensor("attention_mask").size(0), 4);
  EXPECT_TRUE(at::equal(b.tensor("input_ids")[3], original.tensor("input_ids")[0]));
  EXPECT_EQ(b.get_string("uid", 3), "u0");
  EXPECT_EQ(b.meta, original.meta);
}

TEST(CoreBatch, PadEmptyBatch) {
  Batch b;
  b.set_tensor("input_ids", at::empty({0, 10}));
  b.set_tensor("attention_mask", at::empty({0, 10}));
  EXPECT_EQ(b.pad_to_divisor(4), 0);
  EXPECT_EQ(b.size(), 0);
}

TEST(CoreBatch, PadSingleItem) {
  Batch b = make_ids(1);
  EXPECT_EQ(b.pad_to_divisor(4), 3);
  EXPECT_EQ(b.size(), 4);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(at::equal(b.tensor("input_ids")[i], b.tensor("input_ids")[0]));
}

TEST(CoreBatch, PadMoreThanSize) {
  // Padding larger than the batch wraps around the leading rows (ROLL takes data[:min(remaining, len)]).
  Batch b;
  b.set_tensor("x", at::tensor({0, 1}, at::kLong));
  EXPECT_EQ(b.pad_to_divisor(5), 3);
  EXPECT_TRUE(at::equal(b.tensor("x"), at::tensor({0, 1, 0, 1, 0}, at::kLong)));
  EXPECT_NE(error_of([&] { b.unpad(6); }).find("6 padding rows"), std::string::npos);
  EXPECT_NE(error_of([&] { b.pad_to_divisor(0); }).find("divisor"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------- other ops

TEST(CoreBatch, SizeMismatchNamesColumnAndSizes) {
  Batch b = make_proto();
  std::string msg = error_of([&] { b.set_tensor("bad", at::zeros({4, 2})); });
  EXPECT_NE(msg.find("'bad'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 rows"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has 5"), std::string::npos) << msg;
  msg = error_of([&] { b.set_column("bad", {1, 2}); });
  EXPECT_NE(msg.find("'bad' has 2 rows but the batch has 5"), std::string::npos) << msg;
  msg = error_of([&] { Batch(3).set_tensor("t", at::zeros({2})); });
  EXPECT_NE(msg.find("has 3"), std::string::npos) << msg;
  msg = error_of([&] { b.set_tensor("s", at::scalar_tensor(1.0)); });
  EXPECT_NE(msg.find("0-dim"), std::string::npos) << msg;
}

TEST(CoreBatch, MissingKeyNamesExistingKeys) {
  Batch b = make_proto();
  std::string msg = error_of([&] { b.tensor("zz"); });
  EXPECT_NE(msg.find("'zz'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tensors: [a, b]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("non-tensor columns: [c]"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { b.column("a"); }).find("'a'"), std::string::npos);
  EXPECT_NE(error_of([&] { b.erase("zz"); }).find("'zz'"), std::string::npos);
}

TEST(CoreBatch, SetReplacesOtherKind) {
  Batch b = make_proto();
  b.set_column("a", {1, 2, 3, 4, 5});
  EXPECT_FALSE(b.has_tensor("a"));
  EXPECT_EQ(b.get_int("a", 4), 5);
  b.set_tensor("c", at::zeros({5}));
  EXPECT_FALSE(b.has_column("c"));
  b.erase("c");
  EXPECT_FALSE(b.has("c"));
}

TEST(CoreBatch, TypedCellAccessors) {
  Batch b;
  b.set_column("mixed", {"text", 7, 2.5, json{{"k", 1}}});
  EXPECT_EQ(b.get_string("mixed", 0), "text");
  EXPECT_EQ(b.get_int("mixed", 1), 7);
  EXPECT_DOUBLE_EQ(b.get_double("mixed", 1), 7.0);
  EXPECT_DOUBLE_EQ(b.get_double("mixed", 2), 2.5);
  EXPECT_EQ(b.cell("mixed", 3)["k"], 1);
  EXPECT_NE(error_of([&] { b.get_int("mixed", 0); }).find("not an integer"), std::string::npos);
  EXPECT_NE(error_of([&] { b.get_string("mixed", 1); }).find("row 1"), std::string::npos);
  EXPECT_NE(error_of([&] { b.cell("mixed", 4); }).find("out of range"), std::string::npos);
}

TEST(CoreBatch, RepeatInterleaveAndTile) {
  Batch b;
  b.set_tensor("x", at::tensor({1, 2}, at::kLong));
  b.set_column("s", {"a", "b"});
  Batch inter = b.repeat(2, true);
  EXPECT_TRUE(at::equal(inter.tensor("x"), at::tensor({1, 1, 2, 2}, at::kLong)));
  EXPECT_EQ(inter.column("s"), (NonTensorColumn{"a", "a", "b", "b"}));
  Batch tiled = b.repeat(3, false);
  EXPECT_TRUE(at::equal(tiled.tensor("x"), at::tensor({1, 2, 1, 2, 1, 2}, at::kLong)));
  EXPECT_EQ(tiled.column("s"), (NonTensorColumn{"a", "b", "a", "b", "a", "b"}));
}

TEST(CoreBatch, ReorderAndTake) {
  Batch b;
  b.set_tensor("x", at::tensor({10, 11, 12}, at::kLong));
  b.set_column("s", {"a", "b", "c"});
  b.reorder(std::vector<int64_t>{2, 0, 1});
  EXPECT_TRUE(at::equal(b.tensor("x"), at::tensor({12, 10, 11}, at::kLong)));
  EXPECT_EQ(b.column("s"), (NonTensorColumn{"c", "a", "b"}));
  b.reorder(at::tensor({1, 2, 0}, at::kInt));
  EXPECT_TRUE(at::equal(b.tensor("x"), at::tensor({10, 11, 12}, at::kLong)));
  Batch masked = b.take(at::tensor({1, 0, 1}).to(at::kBool));
  EXPECT_EQ(masked.column("s"), (NonTensorColumn{"a", "c"}));
  EXPECT_NE(error_of([&] { b.take(std::vector<int64_t>{3}); }).find("row index 3"), std::string::npos);
}

TEST(CoreBatch, SliceBoundsAndViews) {
  Batch b = make_proto();
  Batch s = b.slice(1, 3);
  EXPECT_EQ(s.size(), 2);
  EXPECT_EQ(s.cell("c", 0)["id"], 1);
  s.tensor("a").zero_();  // slices are views, as TensorDict slicing
  EXPECT_TRUE(at::equal(b.tensor("a")[1], at::zeros({2})));
  EXPECT_NE(error_of([&] { b.slice(2, 6); }).find("[2, 6)"), std::string::npos);
}

TEST(CoreBatch, UnionWith) {
  Batch a = make_proto();
  Batch b = a.select({"a"}, {});
  b.set_tensor("extra", at::ones({5}));
  b.meta["step"] = 1;
  a.union_with(b);
  EXPECT_TRUE(a.has_tensor("extra"));
  EXPECT_EQ(a.meta["step"], 1);
  Batch c = a.select({"a"}, {});
  c.set_tensor("a", at::zeros({5, 2}));
  EXPECT_NE(error_of([&] { a.union_with(c); }).find("tensor 'a' differs"), std::string::npos);
}

TEST(CoreBatch, CastInt64ToInt32) {
  Batch b = make_ids(2);
  b.cast_int64_to_int32();
  EXPECT_EQ(b.tensor("input_ids").scalar_type(), at::kInt);
  EXPECT_EQ(b.tensor("attention_mask").scalar_type(), at::kFloat);
}

// ---------------------------------------------------------------------------------------------- batch_io

Batch make_all_dtypes() {
  Batch b;
  b.set_tensor("f32", at::randn({3, 4}));
  b.set_tensor("bf16", at::randn({3, 5}).to(at::kBFloat16));
  b.set_tensor("f16", at::randn({3, 2}).to(at::kHalf));
  b.set_tensor("f64", at::randn({3}, at::kDouble));
  b.set_tensor("i64", at::randint(-1000000000000LL, 1000000000000LL, {3, 7}, at::kLong));
  b.set_tensor("i32", at::randint(-100000, 100000, {3, 2, 2}, at::kInt));
  b.set_tensor("i8", at::randint(-100, 100, {3}, at::kChar));
  b.set_tensor("u8", at::randint(0, 255, {3}, at::kByte));
  b.set_tensor("i16", at::randint(-1000, 1000, {3}, at::kShort));
  b.set_tensor("mask", at::rand({3, 4}) > 0.5);
  b.set_tensor("empty_tail", at::zeros({3, 0}));
  // Special floats must survive bit for bit.
  b.tensor("f32")[0][0] = std::nanf("");
  b.tensor("f32")[0][1] = -0.0f;
  b.tensor("f32")[0][2] = INFINITY;
  b.set_column("text", {"héllo", "", "multi\nline"});
  b.set_column("num", {1, -2.5, json{{"nested", {1, 2, "x"}}}});
  b.meta = {{"global_step", 7}, {"metrics", {{"loss", {0.1, 0.2}}}}, {"nan", NAN}, {"name", "x"}};
  return b;
}

void expect_same_batch(const Batch& x, const Batch& y) {
  EXPECT_EQ(x.size(), y.size());
  ASSERT_EQ(x.tensor_keys(), y.tensor_keys());
  for (const auto& k : x.tensor_keys()) EXPECT_TRUE(same_bits(x.tensor(k), y.tensor(k))) << k;
  ASSERT_EQ(x.column_keys(), y.column_keys());
  for (const auto& k : x.column_keys()) EXPECT_EQ(x.column(k), y.column(k)) << k;
  // NaN != NaN in JSON comparison; compare the msgpack bytes.
  EXPECT_EQ(json::to_msgpack(x.meta), json::to_msgpack(y.meta));
}

TEST(CoreBatch, SerializeRoundTripAllDtypes) {
  Batch b = make_all_dtypes();
  std::string bytes = serialize(b);
  Batch back = deserialize(bytes);
  expect_same_batch(b, back);
  EXPECT_TRUE(std::isnan(back.meta["nan"].get<double>()));
  EXPECT_EQ(serialize(back), bytes);
}

TEST(CoreBatch, SerializeNonContiguousAndViews) {
  Batch b;
  b.set_tensor("t", at::arange(12, at::kFloat).reshape({3, 4}).t().contiguous().t());  // non-contiguous
  b.set_tensor("v", at::arange(20, at::kLong).reshape({5, 4}).narrow(0, 1, 3));      // offset view
  Batch back = deserialize(serialize(b));
  EXPECT_TRUE(at::equal(back.tensor("t"), b.tensor("t")));
  EXPECT_TRUE(at::equal(back.tensor("v"), b.tensor("v")));
}

TEST(CoreBatch, SerializeEmptyBatches) {
  Batch none;
  none.meta["k"] = 1;
  Batch back = deserialize(serialize(none));
  EXPECT_EQ(back.size(), 0);
  EXPECT_EQ(back.meta["k"], 1);
  back.set_tensor("x", at::zeros({4}));  // size still open, as for a fresh Batch
  EXPECT_EQ(back.size(), 4);

  Batch sized(3);
  EXPECT_EQ(deserialize(serialize(sized)).size(), 3);
  Batch zero_rows;
  zero_rows.set_tensor("x", at::zeros({0, 5}, at::kBFloat16));
  zero_rows.set_column("s", {});
  Batch zr = deserialize(serialize(zero_rows));
  EXPECT_EQ(zr.tensor("x").sizes(), (std::vector<int64_t>{0, 5}));
  EXPECT_TRUE(zr.has_column("s"));
}

TEST(CoreBatch, FramesRoundTripZeroCopy) {
  Batch b = make_all_dtypes();
  BatchFrames frames = to_frames(b);
  ASSERT_EQ(frames.frame_count(), 1 + b.tensor_keys().size());
  // Contiguous CPU tensors are sent from their own memory.
  EXPECT_EQ(frames.tensor_bytes(0).data(), static_cast<const char*>(b.tensor("f32").data_ptr()));

  // Receiver side: buffers owned by a shared block, as ZeroMQ messages would be.
  auto storage = std::make_shared<std::vector<std::string>>();
  for (size_t i = 0; i < frames.tensors.size(); ++i) storage->emplace_back(frames.tensor_bytes(i));
  std::vector<std::string_view> views(storage->begin(), storage->end());
  Batch copied = from_frames(frames.header, views);
  Batch shared = from_frames(frames.header, views, storage);
  expect_same_batch(b, copied);
  expect_same_batch(b, shared);
  EXPECT_EQ(static_cast<const char*>(shared.tensor("i64").data_ptr()), (*storage)[4].data());
  EXPECT_NE(static_cast<const char*>(copied.tensor("i64").data_ptr()), (*storage)[4].data());
  std::weak_ptr<std::vector<std::string>> alive = storage;
  storage.reset();
  EXPECT_FALSE(alive.expired());  // the tensors keep the buffers
  shared = Batch();
  EXPECT_TRUE(alive.expired());
}

TEST(CoreBatch, FramesWrongBuffers) {
  Batch b = make_all_dtypes();
  BatchFrames frames = to_frames(b);
  std::vector<std::string_view> views;
  for (size_t i = 0; i < frames.tensors.size(); ++i) views.push_back(frames.tensor_bytes(i));
  std::vector<std::string_view> fewer(views.begin(), views.end() - 1);
  EXPECT_NE(error_of([&] { from_frames(frames.header, fewer); }).find("buffers came"), std::string::npos);
  views[1] = views[1].substr(1);
  EXPECT_NE(error_of([&] { from_frames(frames.header, views); }).find("tensor 'bf16' needs"), std::string::npos);
}

TEST(CoreBatch, DeserializeTruncatedEveryLength) {
  std::string bytes = serialize(make_all_dtypes());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string msg = error_of([&] { deserialize(std::string_view(bytes).substr(0, n)); });
    EXPECT_NE(msg, "<no roll::Error thrown>") << "prefix " << n;
    EXPECT_TRUE(msg.find("truncated") != std::string::npos || msg.find("corrupt") != std::string::npos ||
                msg.find("bad magic") != std::string::npos)
        << n << ": " << msg;
  }
  EXPECT_NE(error_of([&] { deserialize(bytes + "x"); }).find("1 trailing bytes"), std::string::npos);
}

TEST(CoreBatch, DeserializeCorruptBytes) {
  std::string bytes = serialize(make_all_dtypes());
  std::string bad = bytes;
  bad[0] = 'X';
  EXPECT_NE(error_of([&] { deserialize(bad); }).find("bad magic"), std::string::npos);
  bad = bytes;
  bad[8] = 9;  // version
  EXPECT_NE(error_of([&] { deserialize(bad); }).find("version 9"), std::string::npos);
  // Random byte flips anywhere: either an Error or a batch; never a crash.
  std::mt19937 rng(123);
  int errors = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string flipped = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) flipped[rng() % flipped.size()] = static_cast<char>(rng());
    try {
      deserialize(flipped);
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(CoreBatch, SerializeUnsupportedDtypeNamesTensor) {
  Batch b;
  b.set_tensor("z", at::zeros({2}, at::kComplexFloat));
  std::string msg = error_of([&] { serialize(b); });
  EXPECT_NE(msg.find("'z'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace roll
