// The one codec of Batch::meta["metrics"]: what the roles write, the pipelines read back, and
// every malformed value is refused with the sender and the key.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "roll/core/batch.h"
#include "roll/core/batch_io.h"
#include "roll/core/error.h"
#include "roll/workers/metrics_json.h"

using namespace roll;
using json = nlohmann::json;

namespace {

std::string error_of(const json& metrics, std::string_view source = {}) {
  try {
    workers::metrics_from_json(metrics, source);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WorkersMetricsJson, RoundTripsAndFlattensNestedLists) {
  rl::MetricMap m;
  m.add("actor/pg_loss@sum", std::vector<double>{0.5, 0.25});
  m.add("actor/lr", 1e-3);
  const rl::MetricMap back = workers::metrics_from_json(workers::metrics_to_json(m));
  EXPECT_EQ(back.values(), m.values());

  // Batch::concat of the ranks' metrics, or a reward worker's [[v]], nests lists.
  const rl::MetricMap nested = workers::metrics_from_json(json{{"a", json::array({1, json::array({2.5, 3})})}, {"b", 4}});
  EXPECT_EQ(nested.at("a"), (std::vector<double>{1, 2.5, 3}));
  EXPECT_EQ(nested.at("b"), (std::vector<double>{4}));
}

TEST(WorkersMetricsJson, EmptyListKeepsTheKeyWithoutValues) {
  const rl::MetricMap m = workers::metrics_from_json(json{{"none", json::array()}, {"one", json::array({1.0})}});
  EXPECT_TRUE(m.contains("none"));
  EXPECT_TRUE(m.at("none").empty());
  const auto reduced = m.reduce();
  EXPECT_EQ(reduced.count("none"), 0u);
  EXPECT_EQ(reduced.at("one"), 1.0);
}

TEST(WorkersMetricsJson, NonFiniteNumbersSurviveTheWire) {
  // A NaN loss must reach the tracker as NaN: msgpack (the Batch meta's encoding) keeps it.
  Batch b(0);
  b.meta["metrics"] = json{{"loss", json::array({std::numeric_limits<double>::quiet_NaN(),
                                                 std::numeric_limits<double>::infinity()})}};
  const Batch back = deserialize(serialize(b));
  const rl::MetricMap m = workers::metrics_from_json(back.meta.at("metrics"));
  ASSERT_EQ(m.at("loss").size(), 2u);
  EXPECT_TRUE(std::isnan(m.at("loss")[0]));
  EXPECT_TRUE(std::isinf(m.at("loss")[1]));
}

TEST(WorkersMetricsJson, RefusesEveryNonNumberNamingSenderAndKey) {
  for (const json& bad : {json("0.5"), json(true), json(nullptr), json{{"x", 1}}, json::array({1, "two"}),
                          json::array({json::array({1}), json::array({nullptr})})}) {
    const std::string msg = error_of(json{{"ok", 1}, {"reward/bad", bad}}, "reward-math_rule");
    EXPECT_NE(msg.find("reward-math_rule: "), std::string::npos) << bad.dump() << ": " << msg;
    EXPECT_NE(msg.find("metric 'reward/bad'"), std::string::npos) << bad.dump() << ": " << msg;
    EXPECT_NE(msg.find("where numbers were expected"), std::string::npos) << msg;
  }
  // Without a sender the message starts at the key.
  EXPECT_EQ(error_of(json{{"k", "v"}}).rfind("metric 'k' holds \"v\"", 0), 0u) << error_of(json{{"k", "v"}});
}

TEST(WorkersMetricsJson, MetricsMustBeAnObject) {
  for (const json& bad : {json(nullptr), json::array({1}), json(3)}) {
    const std::string msg = error_of(bad, "actor_train.train_step");
    EXPECT_NE(msg.find("actor_train.train_step: metrics must be an object"), std::string::npos) << msg;
  }
}

}  // namespace
