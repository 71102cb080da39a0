// Tabular output shared by every command: an aligned terminal table, CSV,
// JSON or Markdown. A Report is a list of named sections, each a table.
#pragma once

#include <cstdint>
#include <deque>
#include <ostream>
#include <string>
#include <vector>

namespace ni::analysis {

enum class Format { kTable, kCsv, kJson, kMarkdown };
bool parse_format(const std::string& s, Format& out);

struct Cell {
  enum Kind : unsigned char { kNull, kStr, kNum, kInt };
  Kind kind = kNull;
  int precision = 2;  // for doubles in text formats
  double d = 0;
  std::int64_t i = 0;
  std::string s;
  Cell() = default;
  Cell(std::string v) : kind(kStr), s(std::move(v)) {}                 // NOLINT(implicit)
  Cell(const char* v) : kind(kStr), s(v) {}                            // NOLINT
  Cell(double v, int prec = 2) : kind(kNum), precision(prec), d(v) {}  // NOLINT; NaN renders empty / null
  Cell(std::int64_t v) : kind(kInt), i(v) {}                           // NOLINT
  Cell(int v) : kind(kInt), i(v) {}                                    // NOLINT
  Cell(std::uint64_t v) : kind(kInt), i(static_cast<std::int64_t>(v)) {}  // NOLINT
  std::string text() const;
};

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

struct Section {
  std::string name;   // JSON key, e.g. "summary"
  std::string title;  // human heading
  Table table;
  std::vector<std::string> notes;  // printed under the table in text formats
};

struct Report {
  std::deque<Section> sections;  // deque: add() references stay valid
  Section& add(std::string name, std::string title) {
    sections.push_back(Section{std::move(name), std::move(title), {}, {}});
    return sections.back();
  }
};

void render(const Report& r, Format f, std::ostream& out);
std::string csv_escape(const std::string& s);
std::string json_escape(const std::string& s);

}  // namespace ni::analysis
