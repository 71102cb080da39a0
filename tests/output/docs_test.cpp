// docs/ stay true: configuration.md holds the table generated from the
// settings, log-format.md quotes the encoder's real example lines.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/output/examples.h"
#include "src/core/config.h"
#include "src/core/consumer.h"
#include "tests/output/test_util.h"

namespace ni::out {
namespace {

TEST(DocsTest, ConfigurationTableIsGenerated) {
  std::string doc = testing::read_file(std::string(NI_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_FALSE(doc.empty());
  EXPECT_NE(doc.find(settings_markdown()), std::string::npos)
      << "docs/configuration.md is out of date: run scripts/gen-docs.py. The table should be:\n"
      << settings_markdown();
}

TEST(DocsTest, LogFormatQuotesRealExamples) {
  std::string doc = testing::read_file(std::string(NI_SOURCE_DIR) + "/docs/log-format.md");
  ASSERT_FALSE(doc.empty());
  for (const auto& [name, line] : testing::log_examples()) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << name;
    EXPECT_NE(doc.find(line), std::string::npos)
        << "docs/log-format.md lacks the current example of '" << name
        << "' (run scripts/gen-docs.py):\n"
        << line;
  }
}

// Every example line in docs/log-format.md sits under the heading of its
// record type ("### coll (collective), p2p ..." holds coll, p2p and ce lines):
// no example one heading off, and every line is JSON with a type.
TEST(DocsTest, LogFormatExamplesSitUnderTheirRecordType) {
  const std::string doc = testing::read_file(std::string(NI_SOURCE_DIR) + "/docs/log-format.md");
  ASSERT_FALSE(doc.empty());
  std::istringstream in(doc);
  std::string line, heading;
  std::set<std::string> types;  // the record types the current heading names
  bool in_json = false;
  std::size_t examples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      heading = line;
      types.clear();
      // Words of the heading outside parentheses and backquotes, split at ',' and ' '.
      std::string word;
      int depth = 0;
      for (char c : line.substr(4) + ",") {
        if (c == '(') ++depth;
        if (c == ')') --depth;
        if (depth == 0 && (std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
          word += c;
        } else if (!word.empty()) {
          types.insert(word);
          word.clear();
        }
      }
    } else if (line.rfind("```json", 0) == 0) {
      in_json = true;
    } else if (line.rfind("```", 0) == 0) {
      in_json = false;
    } else if (in_json && !line.empty()) {
      ASSERT_TRUE(nlohmann::json::accept(line)) << line;
      const auto j = nlohmann::json::parse(line);
      ASSERT_TRUE(j.contains("type")) << line;
      EXPECT_EQ(types.count(j["type"].get<std::string>()), 1u) << "under \"" << heading << "\": " << line;
      ++examples;
    }
  }
  EXPECT_GE(examples, 10u);
}

// The mark label limit the docs give is the one the code keeps.
TEST(DocsTest, MarkLabelLimitIsTheCodes) {
  const std::string limit = std::to_string(kMarkLabelMax - 1) + " bytes";
  for (const char* doc : {"/docs/log-format.md", "/docs/configuration.md"}) {
    const std::string text = testing::read_file(std::string(NI_SOURCE_DIR) + doc);
    const auto mark = text.find("ncclInspectorMark");
    ASSERT_NE(mark, std::string::npos) << doc;
    EXPECT_NE(text.find(limit), std::string::npos) << doc << " should say labels are cut at " << limit;
  }
}

// No doc points at a path outside the repository.
TEST(DocsTest, NoPathOutsideTheRepository) {
  for (const char* doc : {"/README.md", "/docs/analysis.md", "/docs/log-format.md", "/docs/configuration.md",
                          "/docs/deployment.md", "/docs/architecture.md", "/docs/emulator.md",
                          "/docs/troubleshooting.md", "/docs/quickstart.md"}) {
    const std::string text = testing::read_file(std::string(NI_SOURCE_DIR) + doc);
    for (const char* outside : {"/work/", "/home/", "../shared"})
      EXPECT_EQ(text.find(outside), std::string::npos) << doc << " names " << outside;
  }
}

}  // namespace
}  // namespace ni::out
