// Integers from untrusted JSON: only integers within the type's range are read.
#include <gtest/gtest.h>

#include "roll/core/json_number.h"

using nlohmann::json;
using roll::json_integer;
using roll::json_integer_or;

TEST(CoreJsonNumber, ReadsIntegersInRange) {
  EXPECT_EQ(json_integer<int>(json(7), "rank"), 7);
  EXPECT_EQ(json_integer<int>(json(-3), "rank"), -3);
  EXPECT_EQ(json_integer<int>(json(2147483647), "rank"), 2147483647);
  EXPECT_EQ(json_integer<uint64_t>(json(18446744073709551615ull), "id"), 18446744073709551615ull);
  EXPECT_EQ(json_integer<int64_t>(json(-9223372036854775807ll - 1), "step"), -9223372036854775807ll - 1);
}

TEST(CoreJsonNumber, RefusesFloatsOutOfRangeAndNonNumbersNamingTheValue) {
  for (const json& bad : {json(1.5), json(3.3e51), json(2147483648ll), json(-2147483649ll), json("7"), json(nullptr),
                          json(true)}) {
    try {
      (void)json_integer<int>(bad, "rank");
      ADD_FAILURE() << bad.dump() << " was read as an int";
    } catch (const roll::Error& e) {
      EXPECT_NE(std::string(e.what()).find("rank is " + bad.dump()), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)json_integer<uint32_t>(json(-1), "size"), roll::Error);
}

TEST(CoreJsonNumber, AnAbsentKeyGivesTheFallback) {
  const json j = {{"cores", 8}};
  EXPECT_EQ(json_integer_or<int>(j, "cores", 0, "cores"), 8);
  EXPECT_EQ(json_integer_or<int>(j, "devices", 2, "devices"), 2);
  EXPECT_THROW((void)json_integer_or<int>(json{{"devices", 0.5}}, "devices", 0, "devices"), roll::Error);
}
