// The small map files the CLI takes (--host-map "host rack", --tag-map "tag name"): one entry per line, '#'
// starts a comment, blank lines are skipped.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ni::analysis {

// Reads the map file `path` (a `what`: "host map", "tag map") line by line. Each line with an entry (its comment
// cut off) goes to parse, which returns false with err set to stop there; err then becomes "PATH:N: " + err.
// A file that cannot be read or holds no entry is an error too ("... names no " + noun).
// `blank`: the characters a line may hold and still be empty (besides its comment).
bool read_map_file(const std::string& path, std::string_view what, std::string_view noun, std::string_view blank,
                   const std::function<bool(std::string& line, std::string& err)>& parse, std::string& err);

}  // namespace ni::analysis
