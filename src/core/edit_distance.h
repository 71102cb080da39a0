// Optimal string alignment distance (Levenshtein plus adjacent
// transpositions), ASCII case ignored: how far a typed name is from a known
// one, for "did you mean" hints (configuration names in the plugin, commands
// in the analyzer). Names are short: O(n*m) is fine. Header-only, so that the
// analyzer uses it without linking the capture core.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string_view>
#include <vector>

namespace ni {

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  auto up = [](char ch) { return static_cast<char>(std::toupper(static_cast<unsigned char>(ch))); };
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = up(a[i - 1]) == up(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && up(a[i - 1]) == up(b[j - 2]) && up(a[i - 2]) == up(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace ni
