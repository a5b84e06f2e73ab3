// The key registry against the schema: every key a struct's `visit` lists has an entry, every
// entry is a key some struct lists, consumers really read the member, and a config that sets an
// ignored key is told so.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config_test_util.h"
#include "roll/config/key_registry.h"

using namespace roll;
using namespace roll::config;
using roll::testing::load_in;
using roll::testing::source_dir;
using roll::testing::TempConfigDir;

namespace {

// Struct name -> its own keys, in visiting order; found from PipelineConfig through every nested
// struct. The keys RewardConfig and EnvManagerConfig take from their WorkerConfig stay WorkerConfig's.
using Schema = std::map<std::string, std::vector<std::string>>;

template <typename S>
void walk(Schema& schema);

class Collector {
 public:
  explicit Collector(Schema& schema) : schema_(schema) {}

  template <typename T>
  void operator()(const char* key, T&) {
    keys.push_back(key);
  }
  void inert(const char* key) { keys.push_back(key); }
  template <typename T>
  void device_mapping(const char* key, T&) {
    keys.push_back(key);
  }
  template <typename S>
  void nested(const char* key, S&) { enter<S>(key); }
  template <typename S>
  void nested(const char* key, std::optional<S>&) { enter<S>(key); }
  template <typename S>
  void nested_map(const char* key, Ordered<S>&) { enter<S>(key); }
  template <typename S>
  void nested_list(const char* key, std::vector<S>&) { enter<S>(key); }

  std::vector<std::string> keys;

 private:
  template <typename S>
  void enter(const char* key) {
    keys.push_back(key);
    walk<S>(schema_);
  }
  Schema& schema_;
};

template <typename S>
void walk(Schema& schema) {
  const std::string name(config_struct_name<S>());
  if (schema.count(name)) return;
  schema[name];  // marks the struct as walked before its nested structs are
  S s{};
  Collector c(schema);
  s.visit(c);
  std::vector<std::string> own = c.keys;
  if constexpr (EmbedsWorkerConfig<S>) {
    walk<WorkerConfig>(schema);
    const auto& worker = schema.at("WorkerConfig");
    std::erase_if(own,
                  [&](const std::string& k) { return std::find(worker.begin(), worker.end(), k) != worker.end(); });
  }
  schema[name] = std::move(own);
}

const Schema& schema() {
  static const Schema s = [] {
    Schema out;
    walk<PipelineConfig>(out);
    return out;
  }();
  return s;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string struct_of(std::string_view key) { return std::string(key.substr(0, key.find('.'))); }
std::string field_of(std::string_view key) { return std::string(key.substr(key.find('.') + 1)); }

}  // namespace

TEST(ConfigKeyRegistry, TheWalkReachesEveryStruct) {
  // A struct missing here would have its keys go unchecked by the tests below.
  EXPECT_EQ(schema().size(), 18u);
  for (const auto& [name, keys] : schema()) EXPECT_FALSE(keys.empty()) << name;
}

TEST(ConfigKeyRegistry, EverySchemaKeyHasAnEntry) {
  std::vector<std::string> missing;
  for (const auto& [name, keys] : schema())
    for (const auto& k : keys)
      if (!find_key_entry(name, k)) missing.push_back(name + "." + k);
  EXPECT_TRUE(missing.empty()) << "schema keys without an entry in src/roll/config/key_registry.cpp: "
                               << ::testing::PrintToString(missing);
}

TEST(ConfigKeyRegistry, EveryEntryIsASchemaKey) {
  std::vector<std::string> stale;
  std::set<std::string_view> seen;
  for (const auto& e : key_registry()) {
    EXPECT_TRUE(seen.insert(e.key).second) << "duplicate registry entry " << e.key;
    auto it = schema().find(struct_of(e.key));
    const bool listed = it != schema().end() &&
                        std::find(it->second.begin(), it->second.end(), field_of(e.key)) != it->second.end();
    if (!listed) stale.push_back(std::string(e.key));
  }
  EXPECT_TRUE(stale.empty()) << "registry entries no struct visits: " << ::testing::PrintToString(stale);
}

TEST(ConfigKeyRegistry, ConsumersReadTheMember) {
  std::map<std::string, std::string> files;
  for (const auto& e : key_registry()) {
    if (e.use != KeyUse::consumed) continue;
    const std::string file(e.detail);
    EXPECT_TRUE(file.starts_with("src/roll/")) << e.key << ": " << file;
    EXPECT_FALSE(file.starts_with("src/roll/config/") && file.ends_with(".h")) << e.key << ": " << file;
    EXPECT_NE(file, "src/roll/config/reader.cpp") << e.key;
    if (!files.count(file)) files[file] = read_text(source_dir() + "/" + file);
    const std::string& text = files[file];
    if (text.empty()) {
      ADD_FAILURE() << e.key << ": cannot read " << file;
      continue;
    }
    const std::string member = e.member.empty() ? field_of(e.key) : std::string(e.member);
    // A member access, or the quoted key for the few keys read from the config tree by name
    // (on-policy distillation's role names, rewritten before typing).
    const std::regex access("(\\.|->)" + member + "\\b|\"" + member + "\"");
    EXPECT_TRUE(std::regex_search(text, access)) << e.key << ": " << file << " does not read ." << member;
  }
}

TEST(ConfigKeyRegistry, IgnoredEntriesGiveAOneLineReason) {
  for (const auto& e : key_registry()) {
    if (e.use != KeyUse::ignored) continue;
    EXPECT_FALSE(e.detail.empty()) << e.key;
    EXPECT_EQ(e.detail.find('\n'), std::string_view::npos) << e.key;
    EXPECT_TRUE(e.member.empty()) << e.key << ": an ignored key names no member";
  }
}

namespace {

const char* kRlvr = roll::testing::kRlvrConfig;

std::vector<std::string> ignored_warnings(const LoadedConfig& l) {
  std::vector<std::string> out;
  for (const auto& w : l.warnings)
    if (w.message.find("accepted and ignored") != std::string::npos) out.push_back(w.message);
  return out;
}

}  // namespace

TEST(ConfigKeyRegistryWarning, NoneWhenNoIgnoredKeyIsSet) {
  TempConfigDir d;
  d.write("exp/rlvr.yaml", kRlvr);
  EXPECT_TRUE(ignored_warnings(load_in(d, "exp", "rlvr")).empty());
  // A null value asks for nothing (ROLL's files write `model_type: ~`), so it is not reported.
  EXPECT_TRUE(ignored_warnings(load_in(d, "exp", "rlvr", {"+actor_train.model_args.model_type=null"})).empty());
}

TEST(ConfigKeyRegistryWarning, OneIgnoredKeyIsNamedWithItsReason) {
  TempConfigDir d;
  d.write("exp/rlvr.yaml", std::string(kRlvr) + "is_num_return_sequences_expand: true\n");
  const auto w = ignored_warnings(load_in(d, "exp", "rlvr"));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("1 key(s)"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("is_num_return_sequences_expand"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find(find_key_entry("PipelineConfig", "is_num_return_sequences_expand")->detail), std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("rlvr.yaml:"), std::string::npos) << "the location is named: " << w[0];
}

TEST(ConfigKeyRegistryWarning, NestedAndWorkerKeysGetTheirFullPathsInOneWarning) {
  TempConfigDir d;
  d.write("exp/rlvr.yaml", kRlvr);
  // A nested struct's key, a WorkerConfig key below a RewardConfig, an inert key, and an ignored
  // nested struct (whose own keys are not listed again).
  const auto w = ignored_warnings(load_in(d, "exp", "rlvr",
                                          {"+actor_infer.generating_args.logprobs=1",
                                           "+rewards.math_rule.max_concurrency=4",
                                           "+actor_train.model_args.cache_dir=x",
                                           "+actor_train.sequence_packing_args.algorithm=load_balance"}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("4 key(s)"), std::string::npos) << w[0];
  for (const char* path : {"actor_infer.generating_args.logprobs", "rewards.math_rule.max_concurrency",
                           "actor_train.model_args.cache_dir", "actor_train.sequence_packing_args"})
    EXPECT_NE(w[0].find(std::string("\n  ") + path), std::string::npos) << path << " in " << w[0];
  EXPECT_EQ(w[0].find("sequence_packing_args.algorithm"), std::string::npos) << w[0];
}
