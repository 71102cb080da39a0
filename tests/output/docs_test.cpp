// docs/ stay true: configuration.md holds the table generated from the
// settings, log-format.md quotes the encoder's real example lines.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/output/examples.h"
#include "src/core/config.h"
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

}  // namespace
}  // namespace ni::out
