// The config area headers each layer may include (docs/architecture.md): engine/, train/ and track/
// read their own blocks (strategy_config, a worker's args, the run's output and tracker keys), so
// none of them includes the whole pipeline config.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "config_test_util.h"

namespace {

namespace fs = std::filesystem;

TEST(ConfigLayerIncludes, EngineTrainTrackIncludeOnlyTheirAreas) {
  // Headers that bring in every area (schema.h, pipeline_config.h and reader.h, which includes
  // schema.h) or another pipeline's part.
  const std::set<std::string> whole = {"schema.h",      "pipeline_config.h", "reader.h",     "ppo_config.h",
                                       "rlvr_config.h", "agentic_config.h",  "sft_config.h", "load.h"};
  const std::regex include_re(R"re(#include "roll/config/([a-z_]+\.h)")re");
  int files = 0;
  for (const char* layer : {"engine", "train", "track"}) {
    const fs::path dir = fs::path(roll::testing::source_dir()) / "src/roll" / layer;
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp") continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, include_re))
          EXPECT_EQ(whole.count(m[1].str()), 0u) << entry.path() << " includes roll/config/" << m[1].str();
      }
    }
  }
  EXPECT_GT(files, 20);
}

}  // namespace
