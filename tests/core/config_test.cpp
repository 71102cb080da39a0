#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/core/config.h"

namespace {

ni::Config load(const std::map<std::string, std::string>& env, std::vector<std::string>* warnings) {
  return ni::load_config(
      [&](const char* n) -> const char* {
        auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      [&](const std::string& w) { warnings->push_back(w); });
}

TEST(Config, DefaultsMatchTheTable) {
  std::vector<std::string> w;
  ni::Config c = load({}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.min_size_bytes, 8192);
  EXPECT_EQ(c.dump_dir, "nccl-inspector-unknown-jobid");
  EXPECT_EQ(c.prom_dir, c.dump_dir);
  for (const auto& s : ni::settings()) EXPECT_FALSE(s.doc.empty()) << s.env;
}

TEST(Config, ValidValuesAreTaken) {
  std::vector<std::string> w;
  ni::Config c = load({{"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0"},
                       {"NCCL_INSPECTOR_ENABLE_P2P", "false"},
                       {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "500"},
                       {"SLURM_JOB_ID", "4242"}},
                      &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.min_size_bytes, 0);
  EXPECT_FALSE(c.enable_p2p);
  EXPECT_EQ(c.dump_interval_us, 500);
  EXPECT_EQ(c.dump_dir, "nccl-inspector-4242");
}

TEST(Config, BadValuesWarnAndKeepTheDefault) {
  std::vector<std::string> w;
  ni::Config c = load({{"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "-1"},
                       {"NCCL_INSPECTOR_ENABLE", "maybe"},
                       {"NCCL_INSPECTOR_SAMPLE_EVERY", "12abc"}},
                      &w);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("NCCL_INSPECTOR_ENABLE"), std::string::npos);
  EXPECT_EQ(c.dump_interval_us, ni::Config{}.dump_interval_us);
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.sample_every, 1);
}

TEST(Config, JobIdCannotEscapeTheDirectoryName) {
  std::vector<std::string> w;
  ni::Config c = load({{"SLURM_JOB_ID", "../../etc"}}, &w);
  EXPECT_EQ(c.dump_dir.find('/'), std::string::npos);
}

TEST(Config, DescribeNamesEverySetting) {
  std::string d = ni::describe(ni::Config{});
  for (const auto& s : ni::settings()) EXPECT_NE(d.find(std::string(s.env) + "="), std::string::npos) << s.env;
  std::string md = ni::settings_markdown();
  for (const auto& s : ni::settings()) EXPECT_NE(md.find(std::string(s.env)), std::string::npos);
}

// The environment's names as load_config_from_env() passes them; no real
// environment is touched.
std::vector<std::string> load_names(const std::vector<std::string>& names) {
  std::vector<std::string> w;
  ni::load_config([](const char*) -> const char* { return nullptr; },
                  [&](const std::string& m) { w.push_back(m); }, names);
  return w;
}

TEST(Config, TypoGetsTheClosestSetting) {
  std::vector<std::string> w =
      load_names({"NCCL_INSPECTOR_ENABEL=0", "NCCL_INSPECTOR_DUMP_DRI", "NCCL_INSPECTOR_ENABEL=1",
                  "NCCL_inspector_prom_dump=1", "nccl_inspector_prom_dump=1"});
  ASSERT_EQ(w.size(), 2u);  // once per name; other prefixes (case differs) are not ours
  EXPECT_NE(w[0].find("NCCL_INSPECTOR_ENABEL is not a setting"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("did you mean NCCL_INSPECTOR_ENABLE?"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("did you mean NCCL_INSPECTOR_DUMP_DIR?"), std::string::npos) << w[1];
  EXPECT_EQ(ni::closest_setting("NCCL_INSPECTOR_enable_p2p"), "NCCL_INSPECTOR_ENABLE_P2P");
  EXPECT_EQ(ni::closest_setting("NCCL_INSPECTOR_SAMPLE_EVRY"), "NCCL_INSPECTOR_SAMPLE_EVERY");
}

TEST(Config, FarOffNameWarnsWithoutASuggestion) {
  std::vector<std::string> w = load_names({"NCCL_INSPECTOR_XYZZY=1", "NCCL_INSPECTOR_=1", "PATH=/bin"});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("NCCL_INSPECTOR_XYZZY is not a setting"), std::string::npos) << w[0];
  for (const auto& m : w) EXPECT_EQ(m.find("did you mean"), std::string::npos) << m;
  EXPECT_EQ(ni::closest_setting("NCCL_INSPECTOR_XYZZY"), "");
}

TEST(Config, KnownNamesGetNoWarning) {
  std::vector<std::string> names;
  for (const auto& s : ni::settings()) {
    names.push_back(std::string(s.env) + "=1");
    names.push_back(std::string(s.env));
  }
  EXPECT_TRUE(load_names(names).empty());
}

}  // namespace
