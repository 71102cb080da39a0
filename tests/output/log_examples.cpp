// Prints the example line of every record type (docs/log-format.md quotes them).
#include <cstdio>

#include <cstring>

#include "tests/output/examples.h"
#include "src/core/config.h"

// With --settings-table: prints docs/configuration.md's generated table.
int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--settings-table") == 0) {
    std::fputs(ni::settings_markdown().c_str(), stdout);
    return 0;
  }
  for (const auto& [name, line] : ni::out::testing::log_examples()) std::printf("%s\n%s\n\n", name.c_str(), line.c_str());
  return 0;
}
