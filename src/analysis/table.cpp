#include "src/analysis/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace ni::analysis {

bool parse_format(const std::string& s, Format& out) {
  if (s == "table" || s == "text") out = Format::kTable;
  else if (s == "csv") out = Format::kCsv;
  else if (s == "json") out = Format::kJson;
  else if (s == "markdown" || s == "md") out = Format::kMarkdown;
  else return false;
  return true;
}

std::string Cell::text() const {
  switch (kind) {
    case kStr: return s;
    case kInt: return std::to_string(i);
    case kNum: {
      if (!std::isfinite(d)) return "";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.*f", precision, d);
      return buf;
    }
    default: return "";
  }
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

std::string json_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o;
}

namespace {
std::string json_cell(const Cell& c) {
  switch (c.kind) {
    case Cell::kStr: return "\"" + json_escape(c.s) + "\"";
    case Cell::kInt: return std::to_string(c.i);
    case Cell::kNum: {
      if (!std::isfinite(c.d)) return "null";
      // Up to 4 decimals more than the table shows, and 9 significant
      // digits: a ratio of float data (util_pct 56.6709022) says no more
      // than its inputs did.
      double v = c.d;
      if (c.precision >= 0 && c.precision <= 8 && std::fabs(v) < 1e12) {
        const double scale = std::pow(10.0, c.precision + 4);
        v = std::round(v * scale) / scale;
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      return buf;
    }
    default: return "null";
  }
}
bool numeric(const Cell& c) { return c.kind == Cell::kNum || c.kind == Cell::kInt; }

void render_text(const Section& s, std::ostream& out, bool markdown) {
  const Table& t = s.table;
  if (markdown) out << "## " << s.title << "\n\n";
  else out << s.title << "\n" << std::string(s.title.size(), '=') << "\n";
  if (t.rows.empty()) {
    out << (markdown ? "_none_\n" : "(none)\n");
  } else {
    std::vector<std::size_t> w(t.columns.size());
    std::vector<std::vector<std::string>> txt;
    for (std::size_t c = 0; c < t.columns.size(); ++c) w[c] = t.columns[c].size();
    for (const auto& r : t.rows) {
      txt.emplace_back();
      for (std::size_t c = 0; c < t.columns.size(); ++c) {
        txt.back().push_back(c < r.size() ? r[c].text() : "");
        w[c] = std::max(w[c], txt.back().back().size());
      }
    }
    auto line_impl = [&](std::ostream& o, const std::vector<std::string>& cells, const std::vector<Cell>* types) {
      if (markdown) o << "|";
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const bool right = types && c < types->size() && numeric((*types)[c]);
        const std::string pad(w[c] - cells[c].size(), ' ');
        o << (markdown ? " " : (c ? "  " : "")) << (right ? pad + cells[c] : cells[c] + pad)
            << (markdown ? " |" : "");
      }
    };
    auto line = [&](const std::vector<std::string>& cells, const std::vector<Cell>* types) {
      std::ostringstream os;
      line_impl(os, cells, types);
      std::string l = os.str();
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out << l << "\n";
    };
    line(t.columns, nullptr);
    if (markdown) {
      out << "|";
      for (std::size_t c = 0; c < w.size(); ++c) {
        const bool right = !t.rows.empty() && c < t.rows[0].size() && numeric(t.rows[0][c]);
        out << " " << std::string(w[c] > 0 ? w[c] - (right ? 1 : 0) : 0, '-') << (right ? ":" : "")
            << " |";
      }
      out << "\n";
    } else {
      std::size_t total = 0;
      for (auto x : w) total += x + 2;
      out << std::string(total > 2 ? total - 2 : 0, '-') << "\n";
    }
    for (std::size_t i = 0; i < txt.size(); ++i) line(txt[i], &t.rows[i]);
  }
  for (const auto& n : s.notes) out << (markdown ? "\n> " : "  ") << n << "\n";
  out << "\n";
}
}  // namespace

void render(const Report& r, Format f, std::ostream& out) {
  switch (f) {
    case Format::kTable:
    case Format::kMarkdown:
      for (const auto& s : r.sections) render_text(s, out, f == Format::kMarkdown);
      break;
    case Format::kCsv: {
      bool first = true;
      for (const auto& s : r.sections) {
        if (r.sections.size() > 1) out << (first ? "" : "\n") << "# " << s.name << "\n";
        first = false;
        for (std::size_t c = 0; c < s.table.columns.size(); ++c)
          out << (c ? "," : "") << csv_escape(s.table.columns[c]);
        out << "\n";
        for (const auto& row : s.table.rows) {
          for (std::size_t c = 0; c < s.table.columns.size(); ++c) {
            std::string v;
            if (c < row.size()) {
              if (row[c].kind == Cell::kNum) v = json_cell(row[c]) == "null" ? "" : json_cell(row[c]);
              else v = row[c].text();
            }
            out << (c ? "," : "") << csv_escape(v);
          }
          out << "\n";
        }
      }
      break;
    }
    case Format::kJson: {
      out << "{";
      for (std::size_t si = 0; si < r.sections.size(); ++si) {
        const auto& s = r.sections[si];
        out << (si ? ",\n" : "\n") << "\"" << json_escape(s.name) << "\": {\"title\": \""
            << json_escape(s.title) << "\", \"notes\": [";
        for (std::size_t i = 0; i < s.notes.size(); ++i)
          out << (i ? ", " : "") << "\"" << json_escape(s.notes[i]) << "\"";
        out << "], \"rows\": [";
        for (std::size_t ri = 0; ri < s.table.rows.size(); ++ri) {
          out << (ri ? ",\n  {" : "\n  {");
          const auto& row = s.table.rows[ri];
          for (std::size_t c = 0; c < s.table.columns.size(); ++c)
            out << (c ? ", " : "") << "\"" << json_escape(s.table.columns[c])
                << "\": " << (c < row.size() ? json_cell(row[c]) : "null");
          out << "}";
        }
        out << "]}";
      }
      out << "\n}\n";
      break;
    }
  }
}

}  // namespace ni::analysis
