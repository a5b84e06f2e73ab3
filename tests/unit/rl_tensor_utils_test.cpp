// pad_to_length and divide_by_chunk_size (ROLL tests/utils/test_functionals.py).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/rl/tensor_utils.h"

namespace roll::rl {
namespace {

TEST(RlTensorUtilsChunks, DivideByChunkSize) {
  std::vector<int64_t> sizes{7, 7, 7, 7, 7, 7, 7, 2};
  auto chunks = divide_by_chunk_size(at::arange(51), sizes);
  ASSERT_EQ(chunks.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(chunks[i].size(0), sizes[i]);
  EXPECT_EQ(chunks[7][1].item<int64_t>(), 50);
  EXPECT_THROW(divide_by_chunk_size(at::arange(51), {7, 7}), Error);
  EXPECT_THROW(divide_by_chunk_size(at::arange(3), {3, 0}), Error);
}

TEST(RlTensorUtilsPad, TruncatesAndPads) {
  at::Tensor t = at::tensor(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 1, 2, 3, 7}).view({2, 7});
  at::Tensor cut = pad_to_length(t, 5, 0);
  EXPECT_EQ(cut.sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(cut[1][4].item<int64_t>(), 2);
  at::Tensor pad = pad_to_length(t, 9, -1);
  EXPECT_EQ(pad.sizes(), (std::vector<int64_t>{2, 9}));
  EXPECT_EQ(pad[0][8].item<int64_t>(), -1);
  EXPECT_EQ(pad[0][6].item<int64_t>(), 7);
  EXPECT_EQ(pad_to_length(t, 3, 0, 0).size(0), 3);
  EXPECT_THROW(pad_to_length(t, 3, 0, 5), Error);
}

}  // namespace
}  // namespace roll::rl
