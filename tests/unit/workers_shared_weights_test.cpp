// The shared-memory weights file (workers/shared_weights.h) in one process: what the writer
// publishes is what a reader's views hold, versions guard the copy, and bad files are errors
// naming the file.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "roll/core/error.h"
#include "roll/workers/shared_weights.h"

namespace roll::workers {
namespace {

model::NamedTensors sample_weights(int64_t seed) {
  at::manual_seed(seed);
  return {{"embed", at::randn({37, 8}).to(at::kBFloat16)},
          {"proj", at::randn({8, 5})},
          // Larger than one copy piece (4 MiB), so the piece split is exercised.
          {"big", at::randn({1 << 20, 3})},
          {"bias", at::randn({5, 2}).t()}};  // not contiguous
}

std::string shm_dir() { return "/dev/shm/roll-test-shared-weights-" + std::to_string(getpid()); }
std::string shm_path(const std::string& name) { return shm_dir() + "/" + name; }

// Removes this process's folder under /dev/shm when a test ends, passed or failed.
struct ShmCleanup {
  ~ShmCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(shm_dir(), ec);
  }
};

void expect_equal(const model::NamedTensors& a, const model::NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.scalar_type(), b[i].second.scalar_type());
    EXPECT_TRUE(at::equal(a[i].second, b[i].second)) << a[i].first;
  }
}

TEST(WorkersSharedWeights, ReaderSeesWhatTheWriterPublished) {
  ShmCleanup cleanup;
  const std::string path = shm_path("weights");
  const model::NamedTensors first = sample_weights(1), second = sample_weights(2);
  auto writer = SharedWeights::create(path, first);
  EXPECT_EQ(writer->version(), -1);  // nothing published yet
  writer->write(first, 0);
  auto reader = SharedWeights::open(path);
  EXPECT_EQ(reader->version(), 0);
  EXPECT_EQ(reader->data_bytes(), writer->data_bytes());
  expect_equal(reader->views(), first);

  // Rewritten in place: the reader's mapping shows the new version without being opened again.
  writer->write(second, 7);
  EXPECT_EQ(reader->version(), 7);
  EXPECT_TRUE(reader->is_current());
  expect_equal(reader->views(), second);

  // Views keep the mapping alive after the reader object is dropped.
  model::NamedTensors views = reader->views();
  reader.reset();
  expect_equal(views, second);
}

TEST(WorkersSharedWeights, LayoutIsFixedAtCreation) {
  ShmCleanup cleanup;
  const std::string path = shm_path("layout");
  model::NamedTensors w = sample_weights(3);
  auto writer = SharedWeights::create(path, w);
  EXPECT_TRUE(writer->matches(w));
  model::NamedTensors other = w;
  other[1].second = at::randn({8, 6});
  EXPECT_FALSE(writer->matches(other));
  EXPECT_THROW(writer->write(other, 1), Error);
  other = w;
  other[0].second = other[0].second.to(at::kFloat);
  EXPECT_FALSE(writer->matches(other));
  EXPECT_THROW(writer->write(w, -1), Error);

  // A reader of a file that was re-created for another layout sees that its mapping is stale.
  auto reader = SharedWeights::open(path);
  EXPECT_TRUE(reader->is_current());
  writer = SharedWeights::create(path, {{"x", at::zeros({4})}});
  EXPECT_FALSE(reader->is_current());
  EXPECT_THROW(reader->write(w, 1), Error);  // only the creator writes
}

TEST(WorkersSharedWeights, CreatorRemovesTheFile) {
  ShmCleanup cleanup;
  const std::string path = shm_path("removed");
  { auto writer = SharedWeights::create(path, sample_weights(4)); }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(WorkersSharedWeights, BadFilesAreErrorsNamingTheFile) {
  ShmCleanup cleanup;
  const std::string dir = shm_path("bad");
  std::filesystem::create_directories(dir);
  auto expect_error = [](const std::string& file, const std::string& part) {
    try {
      SharedWeights::open(file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error(dir + "/missing", "cannot open");
  std::ofstream(dir + "/short") << "ROLL";
  expect_error(dir + "/short", "too small");
  std::ofstream(dir + "/magic") << std::string(64, 'x');
  expect_error(dir + "/magic", "bad magic");

  // A valid file whose table claims more data than the file holds.
  {
    auto writer = SharedWeights::create(dir + "/valid", sample_weights(5));
    writer->write(sample_weights(5), 0);
    std::filesystem::copy_file(dir + "/valid", dir + "/cut");
  }
  std::filesystem::resize_file(dir + "/cut", 4096 + 64);
  expect_error(dir + "/cut", "does not fit");
}

}  // namespace
}  // namespace roll::workers
