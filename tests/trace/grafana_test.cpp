// docs/grafana/nccl-inspector.json only names metrics and labels the plugin
// exports: the text rendered by the plugin's own PromWriter is the reference.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/output/fake_source.h"
#include "src/output/prom.h"

namespace {

using nlohmann::json;
using ni::out::testing::make_coll;
using ni::out::testing::make_comm;

// metric name -> label names, from the real writer's output: a process with a
// launcher rank (global_rank) and one without (pid), default labels.
std::map<std::string, std::set<std::string>> exported() {
  std::string text;
  for (const char* global_rank : {"3", ""}) {
    ni::out::PromWriter w(ni::out::posix_io(), "/nonexistent", {"123", "node-a", 42, "0.1.0", global_rank, false},
                          [](ni::abi::LogLevel, const std::string&) {});
    ni::CommInfo c = make_comm(1, 8, 3);
    w.set_comm(c);
    for (int i = 0; i < 10; ++i) w.add(make_coll(1, static_cast<std::uint64_t>(i)), &c);
    ni::out::StatsSnapshot s;
    text += w.render(s, 1700000000000000000);
  }
  std::istringstream in(text);
  std::map<std::string, std::set<std::string>> m;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto brace = line.find('{');
    const std::string name = line.substr(0, std::min(brace, line.find(' ')));
    auto& labels = m[name];
    if (brace == std::string::npos) continue;
    const std::string body = line.substr(brace + 1, line.rfind('}') - brace - 1);
    bool in_str = false;
    std::string key;
    for (std::size_t i = 0; i < body.size(); ++i) {
      const char ch = body[i];
      if (in_str) {
        if (ch == '\\') ++i;
        else if (ch == '"') in_str = false;
      } else if (ch == '"') {
        in_str = true;
      } else if (ch == '=') {
        labels.insert(key);
        key.clear();
      } else if (ch != ',') {
        key += ch;
      }
    }
  }
  return m;
}

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Checks one PromQL expression (or label_values(...) query); returns problems.
std::vector<std::string> check_expr(const std::string& e, const std::map<std::string, std::set<std::string>>& m) {
  std::vector<std::string> bad;
  std::set<std::string> all_labels = {"le"};
  std::size_t metrics = 0;
  // metric{label=~"..",...}
  for (std::size_t p = e.find("nccl_inspector_"); p != std::string::npos; p = e.find("nccl_inspector_", p + 1)) {
    if (p > 0 && ident(e[p - 1])) continue;
    std::size_t q = p;
    while (q < e.size() && ident(e[q])) ++q;
    const std::string name = e.substr(p, q - p);
    auto it = m.find(name);
    if (it == m.end()) {
      bad.push_back("unknown metric " + name);
      continue;
    }
    ++metrics;
    all_labels.insert(it->second.begin(), it->second.end());
    if (q < e.size() && e[q] == '{') {
      const std::size_t close = e.find('}', q);
      std::string key;
      bool in_str = false;
      for (std::size_t i = q + 1; i < close; ++i) {
        const char ch = e[i];
        if (in_str) {
          if (ch == '\\') ++i;
          else if (ch == '"') in_str = false;
        } else if (ch == '"') {
          in_str = true;
        } else if (ident(ch)) {
          key += ch;
        } else if (!key.empty()) {
          if (!it->second.count(key)) bad.push_back(name + " has no label " + key);
          key.clear();
        }
      }
    }
    p = q - 1;
  }
  if (metrics == 0) bad.push_back("no nccl_inspector_ metric in: " + e);
  // by (...) / label_values(..., label)
  for (std::size_t p = e.find("by ("); p != std::string::npos; p = e.find("by (", p + 1)) {
    const std::string list = e.substr(p + 4, e.find(')', p) - p - 4);
    std::stringstream ss(list);
    std::string l;
    while (std::getline(ss, l, ',')) {
      l.erase(0, l.find_first_not_of(' '));
      l.erase(l.find_last_not_of(' ') + 1);
      if (!all_labels.count(l)) bad.push_back("by (" + l + "): not a label of the metrics");
    }
  }
  if (e.rfind("label_values(", 0) == 0) {
    const auto comma = e.rfind(',');
    std::string l = e.substr(comma + 1, e.rfind(')') - comma - 1);
    l.erase(0, l.find_first_not_of(' '));
    if (!all_labels.count(l)) bad.push_back("label_values label " + l + " not exported");
  }
  return bad;
}

TEST(Grafana, EveryQueryNamesExportedMetricsAndLabels) {
  const auto m = exported();
  ASSERT_TRUE(m.count("nccl_inspector_op_busbw_bytes_per_second_bucket"));
  ASSERT_TRUE(m.at("nccl_inspector_ops_total").count("size_bucket"));
  std::ifstream f(std::string(NI_SOURCE_DIR) + "/docs/grafana/nccl-inspector.json");
  ASSERT_TRUE(f);
  const json d = json::parse(f);
  EXPECT_EQ(d["uid"], "nccl-inspector");
  std::size_t exprs = 0, quantiles = 0;
  std::set<std::string> metrics_used;
  for (const auto& p : d["panels"]) {
    if (p["type"] == "row") continue;
    ASSERT_TRUE(p.contains("targets")) << p["title"];
    for (const auto& t : p["targets"]) {
      const std::string e = t["expr"];
      ++exprs;
      quantiles += e.find("histogram_quantile(") != std::string::npos;
      for (const auto& b : check_expr(e, m)) ADD_FAILURE() << p["title"] << ": " << b;
      // legend labels come from the query's labels
      const std::string lf = t.value("legendFormat", "");
      for (std::size_t a = lf.find("{{"); a != std::string::npos; a = lf.find("{{", a + 2)) {
        const std::string l = lf.substr(a + 2, lf.find("}}", a) - a - 2);
        bool found = false;
        for (const auto& [name, labels] : m)
          if (e.find(name) != std::string::npos && labels.count(l)) found = true;
        EXPECT_TRUE(found) << p["title"] << ": legend label " << l;
      }
      for (const auto& [name, labels] : m)
        if (e.find(name) != std::string::npos) metrics_used.insert(name);
    }
  }
  for (const auto& v : d["templating"]["list"])
    if (v["type"] == "query")
      for (const auto& b : check_expr(v["query"]["query"], m)) ADD_FAILURE() << "variable " << v["name"] << ": " << b;
  EXPECT_GE(exprs, 15u);
  EXPECT_GE(quantiles, 6u);  // busbw and latency percentiles per op/size and per rank
  for (const char* must : {"nccl_inspector_dropped_records_total", "nccl_inspector_op_duration_seconds_bucket",
                           "nccl_inspector_op_busbw_bytes_per_second_bucket", "nccl_inspector_ops_total"})
    EXPECT_TRUE(metrics_used.count(must)) << must;
  // and the checker itself catches a wrong name or label
  EXPECT_FALSE(check_expr("rate(nccl_inspector_ops{job=\"x\"}[5m])", m).empty());
  EXPECT_FALSE(check_expr("sum by (gpu) (rate(nccl_inspector_ops_total[5m]))", m).empty());
  EXPECT_FALSE(check_expr("nccl_inspector_ops_total{device=\"0\"}", m).empty());
}

}  // namespace
