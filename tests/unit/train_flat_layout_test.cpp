// Units, padding and chunk ownership of the flat layout.
#include <gtest/gtest.h>

#include "roll/train/flat_layout.h"

using namespace roll::train;

TEST(TrainFlatLayout, UnitsPerLayerPlusRestPaddedToTheWorld) {
  std::vector<ParamInfo> params = {{"model.embed_tokens.weight", {10, 4}},
                                   {"model.layers.0.a", {3}},
                                   {"model.layers.0.b", {2, 2}},
                                   {"model.layers.1.a", {5}},
                                   {"model.norm.weight", {4}},
                                   {"lm_head.weight", {10, 4}}};
  FlatLayout L = make_flat_layout(params, 2, 3);
  ASSERT_EQ(L.units.size(), 3u);
  EXPECT_EQ(L.units[0].name, "rest");
  EXPECT_EQ(L.units[0].numel, 84);
  EXPECT_EQ(L.units[0].padded, 84);
  EXPECT_EQ(L.units[0].chunk, 28);
  EXPECT_EQ(L.units[1].numel, 7);
  EXPECT_EQ(L.units[1].padded, 9);
  EXPECT_EQ(L.units[1].chunk, 3);
  EXPECT_EQ(L.units[1].params[1].offset, 3);
  EXPECT_EQ(L.units[2].padded, 6);
  EXPECT_EQ(L.units[0].params[2].name, "lm_head.weight");
  EXPECT_EQ(L.units[0].params[2].offset, 44);
  EXPECT_EQ((std::vector<size_t>{2, 1, 0}), L.reduce_order);
  EXPECT_EQ((std::vector<int>{0, 1, 1, 2, 0, 0}), L.unit_of_param);
  EXPECT_EQ((std::vector<int>{0, 0, 1, 0, 1, 2}), L.slot_of_param);
  EXPECT_EQ(L.total_numel(), 84 + 7 + 5);
  EXPECT_NE(L.signature(), make_flat_layout(params, 2, 2).signature());
}
