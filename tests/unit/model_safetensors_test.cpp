// safetensors: round trips, sharding, and every kind of bad file.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "config_test_util.h"
#include "roll/model/safetensors.h"

using namespace roll;
using namespace roll::model;
using roll::testing::error_of;
using roll::testing::TempConfigDir;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

NamedTensors sample() {
  at::manual_seed(3);
  return {{"a.f32", at::randn({3, 5})},
          {"b.bf16", at::randn({4, 2}).to(at::kBFloat16)},
          {"c.f16", at::randn({7}).to(at::kHalf)},
          {"d.i64", at::arange(0, 6, at::kLong).view({2, 3})},
          {"e.scalar", at::tensor(1.5f).reshape({})}};
}

// A hand-made file: header JSON + data bytes.
std::string make_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

}  // namespace

TEST(ModelSafetensors, RoundTripIsByteIdentical) {
  TempConfigDir d;
  const std::string p1 = d.path() + "/a.safetensors", p2 = d.path() + "/b.safetensors";
  write_safetensors(p1, sample());
  auto f = SafetensorsFile::open(p1);
  NamedTensors back;
  for (const auto& e : f->entries()) back.emplace_back(e.name, f->get(e.name));
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].first, sample()[i].first);
    EXPECT_TRUE(at::equal(back[i].second, sample()[i].second)) << back[i].first;
    EXPECT_EQ(back[i].second.scalar_type(), sample()[i].second.scalar_type());
  }
  write_safetensors(p2, back);
  EXPECT_EQ(slurp(p1), slurp(p2));
  EXPECT_EQ(f->metadata().at("format"), "pt");
}

TEST(ModelSafetensors, ShardedDirectoryWithIndex) {
  TempConfigDir d;
  NamedTensors big;
  for (int i = 0; i < 6; ++i) big.emplace_back("w" + std::to_string(i), at::full({256}, static_cast<float>(i)));
  write_safetensors_dir(d.path() + "/m", big, 2048);  // 1 KiB each -> 3 shards of 2
  EXPECT_TRUE(fs::exists(d.path() + "/m/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(d.path() + "/m/model-00003-of-00003.safetensors"));
  auto dir = SafetensorsDir::open(d.path() + "/m");
  EXPECT_EQ(dir.names().size(), 6u);
  EXPECT_EQ(dir.get("w4")[0].item<float>(), 4.0f);
  write_safetensors_dir(d.path() + "/single", big, 1 << 30);
  EXPECT_TRUE(fs::exists(d.path() + "/single/model.safetensors"));
  EXPECT_TRUE(at::equal(SafetensorsDir::open(d.path() + "/single").get("w5"), big[5].second));
}

TEST(ModelSafetensors, TensorsOutliveTheFileObject) {
  TempConfigDir d;
  write_safetensors(d.path() + "/x.safetensors", sample());
  at::Tensor t;
  {
    auto f = SafetensorsFile::open(d.path() + "/x.safetensors");
    t = f->get("a.f32");
  }
  EXPECT_TRUE(at::equal(t, sample()[0].second));
}

TEST(ModelSafetensors, BadFilesAreErrorsNamingFileAndTensor) {
  TempConfigDir d;
  const std::string good = d.path() + "/good.safetensors";
  write_safetensors(good, sample());
  const std::string bytes = slurp(good);
  auto check = [&](const std::string& name, const std::string& content, std::vector<std::string> needles) {
    const std::string p = d.path() + "/" + name + ".safetensors";
    spit(p, content);
    auto msg = error_of([&] {
      auto f = SafetensorsFile::open(p);
      for (const auto& e : f->entries()) f->get(e.name);
    });
    EXPECT_NE(msg.find(p), std::string::npos) << name << ": " << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << name << ": " << msg;
  };
  check("empty", "", {"truncated"});
  check("short_size", std::string("\x10\x00", 2), {"truncated"});
  check("header_too_long", bytes.substr(0, 8) + "{}", {"header claims"});
  check("truncated_data", bytes.substr(0, bytes.size() - 2), {"e.scalar"});
  check("bad_json", make_file("{not json", ""), {"JSON"});
  check("not_object", make_file("[1,2]", ""), {"object"});
  check("unknown_dtype", make_file(R"({"t":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab"),
        {"'t'", "F8_E4M3"});
  check("lying_offsets", make_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,800]}})", std::string(8, 0)),
        {"'t'", "lies"});
  check("reversed_offsets", make_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", std::string(8, 0)),
        {"'t'"});
  check("size_mismatch", make_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 0)),
        {"'t'", "12 bytes expected"});
  check("malformed_entry", make_file(R"({"t":{"dtype":"F32","shape":"x","data_offsets":[0,4]}})", std::string(4, 0)),
        {"'t'"});
  check("negative_dim", make_file(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", std::string(4, 0)),
        {"'t'"});
  auto f = SafetensorsFile::open(good);
  auto msg = error_of([&] { f->get("nope"); });
  EXPECT_NE(msg.find("'nope'"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { SafetensorsFile::open(d.path() + "/missing.safetensors"); }).find("missing"),
            std::string::npos);
}

TEST(ModelSafetensors, BadDirectoriesAreErrors) {
  TempConfigDir d;
  fs::create_directories(d.path() + "/empty");
  EXPECT_NE(error_of([&] { SafetensorsDir::open(d.path() + "/empty"); }).find("no *.safetensors"), std::string::npos);
  d.write("idx/model.safetensors.index.json", R"({"weight_map": {"w": "model-00001-of-00002.safetensors"}})");
  EXPECT_NE(error_of([&] { SafetensorsDir::open(d.path() + "/idx"); }).find("model-00001-of-00002"),
            std::string::npos);
  write_safetensors_dir(d.path() + "/ok", {{"w", at::ones({2})}}, 1 << 20);
  auto dir = SafetensorsDir::open(d.path() + "/ok");
  EXPECT_NE(error_of([&] { dir.get("missing.weight"); }).find("'missing.weight'"), std::string::npos);
}
