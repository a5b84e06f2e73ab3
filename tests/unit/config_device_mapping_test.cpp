// device_mapping expressions.
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "roll/config/device_mapping.h"

using namespace roll;
using namespace roll::config;
using roll::testing::error_of;

TEST(ConfigDeviceMapping, Forms) {
  using V = std::vector<int>;
  EXPECT_EQ(parse_device_mapping("list(range(0,4))", "k"), (V{0, 1, 2, 3}));
  EXPECT_EQ(parse_device_mapping("list(range(4, 8))", "k"), (V{4, 5, 6, 7}));
  EXPECT_EQ(parse_device_mapping("list(range(0,8,2))", "k"), (V{0, 2, 4, 6}));
  EXPECT_EQ(parse_device_mapping("list(range(3))", "k"), (V{0, 1, 2}));
  EXPECT_EQ(parse_device_mapping("list([1,3])", "k"), (V{1, 3}));
  EXPECT_EQ(parse_device_mapping("[0, 1, 2]", "k"), (V{0, 1, 2}));
  EXPECT_EQ(parse_device_mapping("'[5,6]'", "k"), (V{5, 6}));
  EXPECT_EQ(parse_device_mapping("list(range(0,4)) + list(range(8,12))", "k"), (V{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(parse_device_mapping("[0]+[2] + list(range(4,5))", "k"), (V{0, 2, 4}));
}

TEST(ConfigDeviceMapping, ErrorsNameKeyAndPosition) {
  for (const char* bad : {"", "list(range(0,4)", "range(0,4,0)", "list(range(a,b))", "[0,1]+", "list(0,1)",
                          "[0,0]", "[-1]", "list(range(0,4))x"}) {
    auto msg = error_of([&] { parse_device_mapping(bad, "actor_train.device_mapping"); });
    EXPECT_NE(msg.find("actor_train.device_mapping"), std::string::npos) << bad << " -> " << msg;
  }
}

TEST(ConfigDeviceMapping, CompactFormat) {
  EXPECT_EQ(format_device_ids({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(format_device_ids({0, 1, 2, 3, 8, 9}), "0-3,8-9");
  EXPECT_EQ(format_device_ids({4}), "4");
  EXPECT_EQ(format_device_ids({}), "-");
}

TEST(ConfigDeviceMapping, HugeNumbersAreRefusedNotOverflowedOrEnumerated) {
  for (const char* text : {"list(range(0,99999999999999999999))", "list(range(0,4611686018427387904))",
                           "[2147483648]", "list(range(-70000, 0))"}) {
    try {
      (void)parse_device_mapping(text, "actor_train.device_mapping");
      ADD_FAILURE() << text << " was accepted";
    } catch (const roll::ConfigError& e) {
      EXPECT_EQ(e.key(), "actor_train.device_mapping");
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_device_mapping("list(range(+2,4))", "k"), (std::vector<int>{2, 3}));
}
