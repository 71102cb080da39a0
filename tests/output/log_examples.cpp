// Prints the example line of every record type (docs/log-format.md quotes them).
#include <cstdio>

#include "examples.h"

int main() {
  for (const auto& [name, line] : ni::out::testing::log_examples()) std::printf("%s\n%s\n\n", name.c_str(), line.c_str());
  return 0;
}
