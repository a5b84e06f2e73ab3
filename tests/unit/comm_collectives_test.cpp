// Collectives over real Gloo process groups: two ranks of this test binary (multiprocess.h).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "multiprocess.h"
#include "roll/comm/collective_dtype.h"
#include "roll/comm/process_group.h"
#include "roll/core/error.h"

using namespace roll::comm;

TEST(CommCollectivesDtype, GlooRefusesBf16AndInt16ReductionsOnly) {
  EXPECT_FALSE(backend_reduces("gloo", at::kBFloat16));
  EXPECT_FALSE(backend_reduces("gloo", at::kShort));
  EXPECT_FALSE(backend_reduces("gloo", at::kBool));
  for (auto t : {at::kFloat, at::kDouble, at::kHalf, at::kInt, at::kLong, at::kByte, at::kChar})
    EXPECT_TRUE(backend_reduces("gloo", t)) << c10::toString(t);
  EXPECT_TRUE(backend_reduces("nccl", at::kBFloat16));
  at::Tensor bf = at::ones({4}, at::kBFloat16);
  try {
    check_reducible("gloo", bf, "all_reduce");
    FAIL() << "bf16 accepted";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("BFloat16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos) << e.what();
  }
}

TEST(CommCollectivesDtype, ByteViewSharesStorage) {
  at::Tensor t = at::arange(6, at::kFloat).to(at::kBFloat16);
  at::Tensor b = byte_view(t);
  EXPECT_EQ(b.numel(), 12);
  EXPECT_EQ(b.scalar_type(), at::kByte);
  b.zero_();
  EXPECT_EQ(t.to(at::kFloat).abs().sum().item<float>(), 0.0f);
}

TEST(CommCollectivesSingleRank, WorldOfOneIsLocal) {
  auto store = Store::tcp({"127.0.0.1", 0, true, std::chrono::seconds(10)});
  auto pg = ProcessGroup::create(store, 0, 1);
  at::Tensor t = at::arange(4, at::kFloat);
  pg->all_reduce(t);
  EXPECT_TRUE(at::equal(t, at::arange(4, at::kFloat)));
  at::Tensor out = at::empty({4}, at::kBFloat16);
  pg->all_gather(at::arange(4, at::kFloat).to(at::kBFloat16), out);
  EXPECT_TRUE(at::equal(out, at::arange(4, at::kFloat).to(at::kBFloat16)));
  EXPECT_THROW(pg->all_reduce(out), roll::Error);  // refused even where nothing would travel
  for (const char* backend : {"nccl", "hccl", "mpi"}) {
    GroupOptions o;
    o.backend = backend;
    EXPECT_THROW(ProcessGroup::create(store, 0, 1, o), roll::Error) << backend;
  }
}

TEST(CommCollectivesTwoRanks, ReductionsAndDataMovement) {
  if (auto ctx = roll::test::child_context()) {
    auto pg = roll::test::child_group(*ctx);
    const int r = pg->rank(), W = pg->size();
    ASSERT_EQ(W, 2);
    // all_reduce sum / max, fp32 and int64.
    at::Tensor f = at::full({5}, static_cast<float>(r + 1));
    pg->all_reduce(f);
    EXPECT_TRUE(at::allclose(f, at::full({5}, 3.0f)));
    at::Tensor l = at::full({3}, static_cast<int64_t>(10 * r), at::kLong);
    pg->all_reduce(l, ReduceOp::max);
    EXPECT_TRUE(at::equal(l, at::full({3}, static_cast<int64_t>(10), at::kLong)));
    // async all_reduce overlapping other work.
    at::Tensor big = at::full({1 << 16}, 1.0f);
    Work w = pg->all_reduce_async(big);
    at::Tensor busy = at::mm(at::randn({64, 64}), at::randn({64, 64}));
    w.wait();
    EXPECT_EQ(big.sum().item<float>(), 2.0f * (1 << 16));
    // broadcast bf16 (as raw bytes): bit-identical on every rank.
    at::Tensor src = at::randn({7, 3}, at::TensorOptions().dtype(at::kFloat)).to(at::kBFloat16);
    at::Tensor bf = r == 0 ? src.clone() : at::zeros({7, 3}, at::kBFloat16);
    at::Tensor ref = r == 0 ? src.clone() : at::zeros({7, 3}, at::kBFloat16);
    pg->broadcast(bf, 0);
    at::Tensor root_copy = bf.clone();
    pg->broadcast(root_copy, 0);
    EXPECT_TRUE(at::equal(bf, root_copy));
    if (r == 0) {
      EXPECT_TRUE(at::equal(bf, ref));
    }
    // all_gather in rank order, fp32 and bf16.
    at::Tensor mine = at::arange(4, at::kFloat) + 100 * r;
    auto parts = pg->all_gather(mine);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_TRUE(at::equal(parts[0], at::arange(4, at::kFloat)));
    EXPECT_TRUE(at::equal(parts[1], at::arange(4, at::kFloat) + 100));
    at::Tensor out = at::empty({8}, at::kBFloat16);
    pg->all_gather(mine.to(at::kBFloat16), out);
    EXPECT_TRUE(at::equal(out, at::cat({at::arange(4, at::kFloat), at::arange(4, at::kFloat) + 100}).to(at::kBFloat16)));
    // reduce_scatter (emulated on Gloo): chunk r of the sum.
    at::Tensor in = at::arange(6, at::kFloat) * (r + 1);  // sum = arange * 3
    at::Tensor chunk = at::empty({3}, at::kFloat);
    pg->reduce_scatter(in, chunk);
    EXPECT_TRUE(at::equal(chunk, (at::arange(6, at::kFloat) * 3).narrow(0, 3 * r, 3)));
    // async reduce_scatter: the chunk appears at wait().
    at::Tensor in2 = at::ones({4}, at::kFloat);
    at::Tensor chunk2 = at::zeros({2}, at::kFloat);
    Work w2 = pg->reduce_scatter_async(in2, chunk2);
    w2.wait();
    EXPECT_TRUE(at::equal(chunk2, at::full({2}, 2.0f)));
    pg->barrier();
    return;
  }
  roll::test::expect_all_ok(roll::test::run_ranks(2, 60));
}

TEST(CommCollectivesTwoRanks, RefusedDtypesLeaveTheGroupUsable) {
  if (auto ctx = roll::test::child_context()) {
    auto pg = roll::test::child_group(*ctx);
    at::Tensor bf = at::ones({4}, at::kBFloat16);
    EXPECT_THROW(pg->all_reduce(bf), roll::Error);
    at::Tensor i16 = at::ones({4}, at::kShort);
    EXPECT_THROW(pg->all_reduce_async(i16), roll::Error);
    at::Tensor out = at::empty({4}, at::kBFloat16);
    at::Tensor in = at::ones({4}, at::kBFloat16);
    EXPECT_THROW(pg->reduce_scatter(in, out), roll::Error);  // wrong size is refused too (needs 2 x 4)
    // The process is alive and the group still works.
    at::Tensor f = at::ones({4}, at::kFloat);
    pg->all_reduce(f);
    EXPECT_TRUE(at::equal(f, at::full({4}, 2.0f)));
    return;
  }
  roll::test::expect_all_ok(roll::test::run_ranks(2, 60));
}
