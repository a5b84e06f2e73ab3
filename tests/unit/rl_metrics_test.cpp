// MetricMap and ROLL's metric reduction rules (reduce_metrics, tracker tag stripping).
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/rl/metrics.h"

namespace roll::rl {
namespace {

TEST(RlMetricsReducer, AtTagWinsOverUnderscoreSuffix) {
  EXPECT_EQ(reducer_for("actor/pg_loss@sum"), Reducer::sum);
  EXPECT_EQ(reducer_for("actor/ratio_max@max"), Reducer::max);
  EXPECT_EQ(reducer_for("actor/sample_weights_min@min"), Reducer::min);
  EXPECT_EQ(reducer_for("actor/sample_weights_max@mean"), Reducer::mean);
  EXPECT_EQ(reducer_for("latency@p99"), Reducer::p99);
  EXPECT_EQ(reducer_for("x@ std "), Reducer::std);  // ROLL strips spaces around the tag
}

TEST(RlMetricsReducer, UnderscoreSuffixesAndDefaultMean) {
  EXPECT_EQ(reducer_for("tokens_sum"), Reducer::sum);
  EXPECT_EQ(reducer_for("len_max"), Reducer::max);
  EXPECT_EQ(reducer_for("len_min"), Reducer::min);
  EXPECT_EQ(reducer_for("t_p50"), Reducer::p50);
  EXPECT_EQ(reducer_for("t_std"), Reducer::std);
  EXPECT_EQ(reducer_for("critic/score/mean"), Reducer::mean);
  EXPECT_EQ(reducer_for("token/response_length/max"), Reducer::mean);  // "/max" is not a suffix tag
  EXPECT_EQ(reducer_for("summax"), Reducer::mean);
}

TEST(RlMetricsReducer, UnknownAtTagNamesTheKey) {
  try {
    reducer_for("actor/loss@median");
    FAIL() << "expected roll::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("actor/loss@median"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("median"), std::string::npos);
  }
}

TEST(RlMetricsReduce, NumpySemantics) {
  std::vector<double> v{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(reduce_values(v, Reducer::mean), 2.5);
  EXPECT_DOUBLE_EQ(reduce_values(v, Reducer::sum), 10.0);
  EXPECT_DOUBLE_EQ(reduce_values(v, Reducer::max), 4.0);
  EXPECT_DOUBLE_EQ(reduce_values(v, Reducer::min), 1.0);
  EXPECT_DOUBLE_EQ(reduce_values(v, Reducer::p50), 2.5);
  EXPECT_NEAR(reduce_values(v, Reducer::p99), 3.97, 1e-12);
  EXPECT_NEAR(reduce_values(v, Reducer::std), 1.118033988749895, 1e-12);  // population std
  EXPECT_DOUBLE_EQ(reduce_values({7}, Reducer::p99), 7.0);
  EXPECT_THROW(reduce_values({}, Reducer::mean), Error);
}

TEST(RlMetricsMap, AddMergeReduce) {
  MetricMap a, b;
  a.add("actor/pg_loss@sum", 0.25);
  a.add("actor/pg_loss@sum", 0.5);
  a.add("actor/ratio_max@max", 1.1);
  a.add("critic/score/mean", 1.0);
  b.add("actor/ratio_max@max", 1.3);
  b.add("critic/score/mean", 0.0);
  b.add("new_key", {1.0, 3.0});
  a.merge(b);
  auto r = a.reduce();
  EXPECT_DOUBLE_EQ(r.at("actor/pg_loss@sum"), 0.75);
  EXPECT_DOUBLE_EQ(r.at("actor/ratio_max@max"), 1.3);
  EXPECT_DOUBLE_EQ(r.at("critic/score/mean"), 0.5);
  EXPECT_DOUBLE_EQ(r.at("new_key"), 2.0);
  EXPECT_EQ(a.at("critic/score/mean").size(), 2u);
  EXPECT_DOUBLE_EQ(a.last("actor/ratio_max@max"), 1.3);
  EXPECT_THROW(a.at("missing"), Error);
}

TEST(RlMetricsMap, PrefixedMergeForDomains) {
  MetricMap d;
  d.add("critic/kl", 0.1);
  MetricMap all;
  all.merge_prefixed(d, "math/");
  EXPECT_TRUE(all.contains("math/critic/kl"));
}

TEST(RlMetricsStrip, TrackersDropTheLastAtTag) {
  EXPECT_EQ(strip_metric_tag("actor/pg_loss@sum"), "actor/pg_loss");
  EXPECT_EQ(strip_metric_tag("a@b@max"), "a@b");
  EXPECT_EQ(strip_metric_tag("plain"), "plain");
  auto s = strip_metric_tags({{"x@sum", 1.0}, {"y", 2.0}});
  EXPECT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s.at("x"), 1.0);
}

}  // namespace
}  // namespace roll::rl
