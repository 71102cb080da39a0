#include "src/analysis/report.h"

#include <algorithm>
#include <any>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "src/analysis/analysis.h"
#include "src/analysis/report_model.h"
#include "src/analysis/slow_hca.h"
#include "src/analysis/stats.h"
#include "src/analysis/stragglers.h"
#include "src/analysis/summary.h"
#include "src/analysis/table.h"

namespace ni::analysis {

namespace {

std::string num(double v) { return json_num(v); }
std::string q(const std::string& s) { return "\"" + json_escape(s) + "\""; }

std::string iso(std::int64_t ns) {
  const std::time_t s = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char b[64];
  std::snprintf(b, sizeof b, "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  return b;
}

// A JSON array of chart/table objects, built as text.
struct List {
  std::string s;
  std::size_t n = 0;
  void add(const std::string& obj) {
    s += (n++ ? "," : "") + obj;
  }
  // A chart: `points` is how many data points it holds (boxes, line points and
  // marks, non-null bars and heatmap cells), written into it for the page's
  // tests; a chart without any is left out.
  void add_plot(const std::string& obj, std::size_t points) {
    if (points == 0 || obj.empty() || obj.back() != '}') return;
    add(obj.substr(0, obj.size() - 1) + ",\"points\":" + std::to_string(points) + "}");
    total_points += points;
  }
  std::size_t total_points = 0;
  std::string str() const { return "[" + s + "]"; }
};

std::string series_box(const std::string& name, const std::vector<std::string>& boxes) {
  std::string s = "{\"name\":" + q(name) + ",\"boxes\":[";
  for (std::size_t i = 0; i < boxes.size(); ++i) s += (i ? "," : "") + boxes[i];
  return s + "]}";
}
std::string box_of(int cat, const QuantileSketch& k) {
  return "[" + std::to_string(cat) + "," + num(k.quantile(0.05)) + "," + num(k.quantile(0.25)) + "," +
         num(k.quantile(0.5)) + "," + num(k.quantile(0.75)) + "," + num(k.quantile(0.95)) + "," +
         std::to_string(k.count()) + "]";
}
std::string str_array(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + q(v[i]);
  return s + "]";
}

struct RTable {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // JSON values
  std::string note;
  std::string json() const {
    std::string s = "{\"title\":" + q(title) + ",\"columns\":" + str_array(columns) + ",\"rows\":[";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      s += i ? ",[" : "[";
      for (std::size_t j = 0; j < rows[i].size(); ++j) s += (j ? "," : "") + rows[i][j];
      s += "]";
    }
    return s + "],\"note\":" + q(note) + "}";
  }
};

struct RSection {
  std::string id, title, note;
  List plots, tables;
  std::string json() const {
    static const std::map<std::string, std::string> kNav = {
        {"health", "Health"}, {"busbw", "busbw"}, {"size", "busbw vs size"}, {"latency", "Latency"},
        {"time", "Over time"}, {"phases", "Phases"}, {"tags", "Tags"}, {"stragglers", "Stragglers"}, {"channels", "Channels & HCAs"}, {"occupancy", "Occupancy & gaps"}};
    // A registered analysis's section is named by its id (the subcommand) in the navigation bar.
    auto it = kNav.find(id);
    return "{\"id\":" + q(id) + ",\"nav\":" + q(it == kNav.end() ? id : it->second) + ",\"title\":" + q(title) + ",\"note\":" + q(note) + ",\"plots\":" + plots.str() +
           ",\"tables\":" + tables.str() + "}";
  }
};

// A section of the page: its id (the anchor and the navigation's key) and heading.
RSection section(std::string id, std::string title) {
  RSection s;
  s.id = std::move(id);
  s.title = std::move(title);
  return s;
}

// Script text for a <script> element: "</script" (any case) would close it, so it becomes "<\/script", which is
// the same text inside JavaScript strings, regular expressions, templates and comments, the only places it can
// occur. "<!--" followed later by "<script" would switch the HTML parser into a mode where the element's end tag
// is not recognised: such a bundle is refused (Plotly's has neither).
std::string script_safe(std::string_view js) {
  auto lower_at = [&](std::size_t i, std::string_view w) {
    if (i + w.size() > js.size()) return false;
    for (std::size_t k = 0; k < w.size(); ++k)
      if (std::tolower(static_cast<unsigned char>(js[i + k])) != w[k]) return false;
    return true;
  };
  std::string out;
  out.reserve(js.size() + 16);
  bool comment_open = false, script_open = false;
  for (std::size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<') {
      comment_open |= lower_at(i, "<!--");
      script_open |= lower_at(i, "<script");
      if (lower_at(i, "</script")) {
        out += "<\\/";
        ++i;
        continue;
      }
    }
    out += js[i];
  }
  if (comment_open && script_open)
    throw std::invalid_argument("the Plotly.js bundle contains \"<!--\" and \"<script\": it cannot be inlined in a page");
  return out;
}

// What every section of the page reads: the folds of the ops (report_model.h),
// the read result and the options.
struct Page {
  const ReportModel& m;
  const ReadResult& res;
  const ReportOptions& o;
  const GpuMap& gm;
  const std::vector<std::string>& gpu_labels;
  bool timed;
  Page(const ReportModel& model, const ReadResult& r, const ReportOptions& opt)
      : m(model), res(r), o(opt), gm(model.g.gm), gpu_labels(model.gpu_labels), timed(model.timed) {}
  double sec(std::int64_t ns) const { return m.sec(ns); }
  // The typed result of the analysis `name` (nullptr: not registered or another type).
  template <class T>
  const T* detail(std::string_view name) const {
    for (const auto& ran : m.analyses)
      if (ran.analysis->name() == name) return std::any_cast<T>(&ran.result.detail);
    return nullptr;
  }
};

std::string comm_series_name(std::uint64_t c, const ReadResult& res) {
  return comm_short(c, res) + " " + hex_hash(c).substr(0, 10);
}

// A box chart per func (categories) and communicator (series, in gm.comms order).
std::size_t box_by_func_and_comm(const Page& p, const std::map<std::pair<Func, std::uint64_t>, QuantileSketch>& k,
                                 std::string& cats_json, std::string& series_json) {
  std::set<Func> funcs;
  for (const auto& [key, v] : k) funcs.insert(key.first);
  std::vector<std::string> cats;
  std::map<Func, int> ci;
  for (Func f : funcs) {
    ci[f] = static_cast<int>(cats.size());
    cats.push_back(std::string(to_string(f)));
  }
  std::size_t nboxes = 0, ns = 0;
  for (std::uint64_t c : p.gm.comms) {
    std::vector<std::string> boxes;
    for (Func f : funcs)
      if (auto it = k.find({f, c}); it != k.end()) boxes.push_back(box_of(ci[f], it->second));
    nboxes += boxes.size();
    if (!boxes.empty()) series_json += (ns++ ? "," : "") + series_box(comm_series_name(c, p.res), boxes);
  }
  cats_json = str_array(cats);
  return nboxes;
}

// The input's size and losses.
RTable input_table(const Page& p) {
  const ReportScan& sc = p.m.scan;
  const ReadResult& res = p.res;
  RTable t;
  t.title = "Input";
  t.columns = {"what", "value"};
  const DropTotals dt = drop_totals(res);
  auto row = [&](const std::string& k, const std::string& v) { t.rows.push_back({q(k), v}); };
  row("files", std::to_string(res.files.size()));
  row("ops", std::to_string(sc.ops));
  row("ranks (GPUs)", std::to_string(p.gm.gpus.size()));
  row("communicators", std::to_string(p.gm.comms.size()));
  if (p.timed) {
    row("first op", q(iso(p.m.g.t0)));
    row("time span (s)", num(p.sec(p.m.t1)));
  }
  row("ops without a start time (not on timelines)", std::to_string(sc.no_start));
  row("truncated files (killed writer)", std::to_string(res.truncated_files));
  row("corrupt files", std::to_string(res.corrupt_files));
  row("files not read to the end (out of memory)", std::to_string(res.failed_files));
  row("bad lines", std::to_string(res.bad_lines));
  row("unknown records", std::to_string(res.unknown_records));
  row("plugin outputs without an end record", std::to_string(dt.outputs_without_end));
  if (dt.unaccounted) row("records lost uncounted", std::to_string(dt.unaccounted));
  if (dt.written_not_read) row("written records not read (file missing?)", std::to_string(dt.written_not_read));
  std::uint64_t dropped = 0;
  for (const auto& [k, n] : dt.dropped) {
    dropped += n;
    row("dropped: " + k, std::to_string(n));
  }
  for (const auto& [k, n] : dt.filtered) row("filtered by configuration: " + k, std::to_string(n));
  row("reclaimed ops (timed out)", std::to_string(sc.reclaimed));
  row("partial ops", std::to_string(sc.partial));
  std::map<std::string, std::uint64_t> timing;
  for (const auto& [tm, n] : sc.timing) timing[std::string(to_string(tm))] += n;
  for (const auto& [k, n] : timing) row("timing source: " + k, std::to_string(n));
  t.note = dropped ? "Records were dropped: counts and rates below undercount those periods." : "";
  return t;
}

// Clock uncertainty per communicator.
RTable clock_table(const Page& p) {
  const ReadResult& res = p.res;
  RTable c;
  c.title = "Clock alignment (GPU to wall clock, from clock records)";
  c.columns = {"communicator", "estimates", "max uncertainty (us)", "last uncertainty (us)", "samples"};
  std::map<std::uint64_t, std::tuple<std::uint64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>> cl;
  for (const auto& f : res.files)
    for (const auto& k : f.clocks) {
      auto& [n, mx, last, last_wall, samples] = cl[k.comm_hash];
      ++n;
      mx = std::max(mx, k.uncertainty_ns);
      if (k.wall_ns >= last_wall) {
        last_wall = k.wall_ns;
        last = k.uncertainty_ns;
        samples = k.samples;
      }
    }
  for (const auto& [h, v] : cl)
    c.rows.push_back({q(comm_display(h, res)), std::to_string(std::get<0>(v)), num(static_cast<double>(std::get<1>(v)) / 1e3),
                      num(static_cast<double>(std::get<2>(v)) / 1e3), std::to_string(std::get<4>(v))});
  c.note = cl.empty() ? "No clock records: cross-rank times rely on CPU clocks (or the logs are upstream v4.0)."
                      : "Start skew across processes below the uncertainty of a communicator is not meaningful; "
                        "lateness (stragglers) is measured from kernel times, without clocks.";
  return c;
}

// What the clock calibration shifted (stragglers.h), per communicator.
RTable calibration_table(const Page& p) {
  RTable c;
  c.title = "Clock calibration (from the collectives' common end)";
  c.columns = {"communicator", "ranks", "offset range before (us)", "uncertainty (us)", "most ahead", "largest shift (us)"};
  const ClockCalibration* cal = p.o.calibration;
  if (cal == nullptr) {
    c.note = "Not calibrated (--no-clock-calibration): charts place each rank at its logged times.";
    return c;
  }
  for (const CommClock& x : cal->comms) {
    double largest = 0;
    for (auto it = cal->shift_ns.lower_bound({x.comm, INT32_MIN}); it != cal->shift_ns.end() && it->first.first == x.comm; ++it)
      largest = std::max(largest, static_cast<double>(it->second) / 1000.0);
    c.rows.push_back({q(comm_display(x.comm, p.res)), std::to_string(x.ranks), num(x.range_us), num(x.spread_us),
                      q("rank " + std::to_string(x.ahead_rank) + " on " + x.ahead_host), num(largest)});
  }
  c.note = std::to_string(cal->comms.size()) + " of " + std::to_string(cal->comms_measured) +
           " communicators with GPU-timed collectives had ranks whose clocks disagree; each of their ranks is "
           "shifted by its offset (its kernel ends against the others') to the rank least ahead, so every "
           "chart puts the ranks on one timeline. --no-clock-calibration: times as logged.";
  return c;
}

// Every registered analysis's findings (analysis.h), in registry order.
RTable findings_table(const Page& p) {
  RTable fd;
  fd.title = "Findings (stragglers and anomalies detectors)";
  fd.columns = {"kind", "communicator", "where", "when", "magnitude", "evidence"};
  for (const auto& ran : p.m.analyses)
    for (const auto& m : ran.result.markers)
      if (m.in_table) fd.rows.push_back({q(m.kind), q(m.comm_label), q(m.where), q(m.when), num(m.magnitude), q(m.evidence)});
  fd.note = fd.rows.empty() ? "No findings." : "";
  return fd;
}

void health_section(const Page& p, std::vector<RSection>& out) {
  RSection s = section("health", "Overview and health");
  s.note = "Read this first: the findings (each with its evidence), then the losses, truncation and clock "
           "uncertainty that bound what the charts can show.";
  s.tables.add(findings_table(p).json());
  s.tables.add(input_table(p).json());
  s.tables.add(clock_table(p).json());
  s.tables.add(calibration_table(p).json());
  out.push_back(std::move(s));
}
void busbw_section(const Page& p, std::vector<RSection>& out) {
  RSection s = section("busbw", "Bus bandwidth per operation and communicator");
  s.note = "Boxes: P25-P75 with the median; whiskers P5-P95; n in the tooltip. busbw as recorded per op on each rank (nccl-tests factors).";
  if (!p.m.scan.busbw.empty()) {
    std::string cats, series;
    const std::size_t nboxes = box_by_func_and_comm(p, p.m.scan.busbw, cats, series);
    s.plots.add_plot("{\"type\":\"box\",\"title\":\"busbw by operation (colour: communicator)\",\"ylabel\":\"busbw (GB/s)\",\"categories\":" +
                         cats + ",\"series\":[" + series + "]}",
                     nboxes);
  }
  out.push_back(std::move(s));
}

// Curves by label ("Ring/Simple"): the groups of one label merged.
std::map<std::tuple<Func, std::string, int>, QuantileSketch> by_label(const SizeCurves& c) {
  std::map<std::tuple<Func, std::string, int>, QuantileSketch> m;
  for (const auto& [k, v] : c) m[{std::get<0>(k), std::get<1>(k).label(), std::get<2>(k)}].merge(v);
  return m;
}

void size_section(const Page& p, std::vector<RSection>& out) {
  const SizeCurves* baseline = p.m.baseline;
  RSection s = section("size", "Bus bandwidth vs message size");
  s.note = baseline ? "Median busbw per power-of-two size bucket, per algorithm/protocol; dashed: the baseline run."
                    : "Median busbw per power-of-two size bucket, per algorithm/protocol (give --baseline DIR to compare).";
  const auto run = by_label(p.m.scan.size);
  const auto base = baseline ? by_label(*baseline) : decltype(run){};
  std::set<Func> funcs;
  for (const auto& [key, v] : run) funcs.insert(std::get<0>(key));
  for (Func f : funcs) {
    std::string series;
    std::size_t ns = 0, npts = 0;
    for (const auto* m : {&run, &base}) {
      std::map<std::string, std::string> pts;
      for (const auto& [key, v] : *m)
        if (std::get<0>(key) == f && ++npts)
          pts[std::get<1>(key)] += (pts[std::get<1>(key)].empty() ? "" : ",") + std::string("[") +
                                   num(std::ldexp(1.0, std::get<2>(key))) + "," + num(v.quantile(0.5)) + "," +
                                   std::to_string(v.count()) + "]";
      for (const auto& [ap, pt] : pts) {
        series += (ns++ ? "," : "") + std::string("{\"name\":") + q((m == &base ? "baseline " : "") + ap) +
                  ",\"dash\":" + (m == &base ? "true" : "false") + ",\"points\":[" + pt + "]}";
      }
    }
    s.plots.add_plot("{\"type\":\"line\",\"title\":" + q(std::string(to_string(f)) + ": busbw vs size") +
                     ",\"xlabel\":\"message size (bytes, bucket lower bound)\",\"xscale\":\"log2\",\"xbytes\":true,"
                     "\"ylabel\":\"busbw P50 (GB/s)\",\"markers\":true,\"series\":[" + series + "]}",
                     npts);
  }
  out.push_back(std::move(s));
}

void latency_section(const Page& p, std::vector<RSection>& out) {
  const ReadResult& res = p.res;
  RSection s = section("latency", "Latency percentiles");
  RTable t;
  t.title = "Latency per communicator, operation and size bucket";
  t.columns = {"communicator", "op", "size", "algo/proto", "count", "P50 (us)", "P90 (us)", "P99 (us)", "max (us)"};
  std::map<std::tuple<std::string, std::uint64_t, Func, int, std::string>, QuantileSketch> k;
  for (const auto& [key, v] : p.m.scan.latency) {
    const auto& [comm, func, bucket, ap] = key;
    k[{comm_short(comm, res), comm, func, bucket, ap.label()}].merge(v);
  }
  for (const auto& [key, v] : k) {
    if (t.rows.size() >= 400) {
      t.note = "First 400 rows; nccl-inspector summary has them all.";
      break;
    }
    t.rows.push_back({q(comm_display(std::get<1>(key), res)), q(std::string(to_string(std::get<2>(key)))),
                      q(size_bucket_label(std::get<3>(key))), q(std::get<4>(key)), std::to_string(v.count()),
                      num(v.quantile(0.5)), num(v.quantile(0.9)), num(v.quantile(0.99)), num(v.max())});
  }
  s.tables.add(t.json());
  out.push_back(std::move(s));
}

// Kernel phases (NCCL 2.31+): how much of the kernel time the channels spent
// waiting for their peers (initial_sync), per operation and communicator, and
// per (communicator, op, size). Absent without phases in the logs.
void phases_section(const Page& p, std::vector<RSection>& out) {
  const ReadResult& res = p.res;
  if (p.m.scan.wait_share.empty()) return;
  RSection s = section("phases", "Kernel time split: waiting for the peers");
  s.note = "NCCL 2.31+ kernel phases (NCCL_INSPECTOR_ENABLE_PHASES=1): initial_sync is the time an op's median channel "
           "waited for its peers before moving data. A large share means the kernel time went to waiting for a late "
           "rank, not to the transfer (see Stragglers). Boxes: P25-P75 with the median; whiskers P5-P95.";
  std::string cats, series;
  const std::size_t nboxes = box_by_func_and_comm(p, p.m.scan.wait_share, cats, series);
  s.plots.add_plot("{\"type\":\"box\",\"title\":\"share of kernel time waiting for the peers (colour: communicator)\","
                   "\"ylabel\":\"initial_sync / kernel time (%)\",\"categories\":" + cats + ",\"series\":[" + series + "]}",
                   nboxes);
  std::map<std::tuple<std::string, std::uint64_t, Func, int>, const std::pair<QuantileSketch, QuantileSketch>*> rows;
  for (const auto& [key, v] : p.m.scan.wait_rows)
    rows[{comm_short(std::get<0>(key), res), std::get<0>(key), std::get<1>(key), std::get<2>(key)}] = &v;
  RTable t;
  t.title = "Waiting for the peers per communicator, operation and size bucket";
  t.columns = {"communicator", "op", "size", "ops", "initial_sync P50 (us)", "initial_sync P90 (us)", "share P50 (%)"};
  for (const auto& [key, v] : rows) {
    if (t.rows.size() >= 400) {
      t.note = "First 400 rows; nccl-inspector summary has them all.";
      break;
    }
    t.rows.push_back({q(comm_display(std::get<1>(key), res)), q(std::string(to_string(std::get<2>(key)))),
                      q(size_bucket_label(std::get<3>(key))), std::to_string(v->first.count()),
                      num(v->first.quantile(0.5)), num(v->first.quantile(0.9)), num(v->second.quantile(0.5))});
  }
  s.tables.add(t.json());
  out.push_back(std::move(s));
}

// NCCL 2.31+ user tags: which of the model's collectives the NCCL time went
// to. Per tag (and the untagged calls): records, kernel time summed over
// ranks and its share of all GPU-timed time, latency and busbw percentiles;
// a box of busbw per tag. Only GPU-timed records give time and bandwidth.
// Absent when no call carries a tag.
void tags_section(const Page& p, std::vector<RSection>& out) {
  if (!p.m.scan.tagged) return;
  const TagNames names = tag_names(p.res, p.o.tag_map);
  using Acc = ReportScan::TagAcc;
  std::int64_t total_ns = 0;
  for (const auto& [tag, a] : p.m.scan.tags) total_ns += a.gpu_ns;
  // Rows by kernel time, the busiest first.
  std::vector<std::pair<std::uint64_t, const Acc*>> order;
  for (const auto& [tag, a] : p.m.scan.tags) order.push_back({tag, &a});
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.second->gpu_ns > y.second->gpu_ns; });
  RSection s = section("tags", "Tagged collectives: where the NCCL time went");
  s.note = "NCCL 2.31+ user tags (ncclCollConfig_t.userProfilerTag), named by the logs' tag records "
           "(ncclInspectorNameTag) or --tag-map. Kernel time is summed over ranks; only GPU-timed records give time "
           "and bandwidth. Boxes: P25-P75 with the median; whiskers P5-P95.";
  if (std::string n = names.note(); !n.empty()) s.note += " " + n + ".";
  constexpr std::size_t kMaxBoxes = 40;
  std::vector<std::string> cats, boxes;
  for (const auto& [tag, a] : order) {
    if (a->bw.count() == 0 || boxes.size() >= kMaxBoxes) continue;
    boxes.push_back(box_of(static_cast<int>(cats.size()), a->bw));
    cats.push_back(names.label(tag));
  }
  if (!boxes.empty())
    s.plots.add_plot("{\"type\":\"box\",\"title\":\"busbw per tag (the busiest first)\",\"ylabel\":\"busbw (GB/s)\","
                     "\"categories\":" + str_array(cats) + ",\"series\":[" + series_box("busbw", boxes) + "]}",
                     boxes.size());
  RTable t;
  t.title = "Per tag";
  t.columns = {"tag", "ops", "records", "kernel time (ms)", "share (%)", "P50 (us)", "P90 (us)", "busbw P50 (GB/s)"};
  for (const auto& [tag, a] : order) {
    if (t.rows.size() >= 400) {
      t.note = "First 400 tags; nccl-inspector summary --group-by tag has them all.";
      break;
    }
    std::string funcs;
    for (Func f : a->funcs) funcs += (funcs.empty() ? "" : " ") + std::string(to_string(f));
    const bool timed = a->lat.count() > 0;
    const double gpu_ns = static_cast<double>(a->gpu_ns);
    t.rows.push_back({q(names.label(tag)), q(funcs), std::to_string(a->records), timed ? num(gpu_ns / 1e6) : "null",
                      timed && total_ns > 0 ? num(100.0 * gpu_ns / static_cast<double>(total_ns)) : "null",
                      timed ? num(a->lat.quantile(0.5)) : "null", timed ? num(a->lat.quantile(0.9)) : "null",
                      a->bw.count() ? num(a->bw.quantile(0.5)) : "null"});
  }
  s.tables.add(t.json());
  out.push_back(std::move(s));
}

// The analyses' markers on communicator c's chart: bands (time windows) and points
// (at the op's busbw, CommPass::marks).
void time_marks(const Page& p, std::uint64_t c, std::string& bands, std::string& marks, std::size_t& npts) {
  for (const auto& ran : p.m.analyses)
    for (const auto& m : ran.result.markers)
      if (m.comm == c && m.chart == Marker::Chart::kBand)
        bands += (bands.empty() ? "[" : ",[") + num(p.sec(m.start_ns)) + "," + num(p.sec(m.end_ns)) + "," +
                 q(m.where + ": " + m.evidence) + "]";
  for (const auto& ran : p.m.analyses)
    for (const auto& m : ran.result.markers) {
      if (m.chart != Marker::Chart::kPoint || m.comm != c || m.start_ns == 0) continue;
      auto it = p.m.comm.mark_bw.find({c, m.rank, m.start_ns});
      const double bw = it == p.m.comm.mark_bw.end() ? kNaN : it->second;
      if (std::isfinite(bw) && ++npts)
        marks += (marks.empty() ? "[" : ",[") + num(p.sec(m.start_ns)) + "," + num(bw) + "," + q(m.where + ": " + m.evidence) + "]";
    }
}

void time_section(const Page& p, std::vector<RSection>& out) {
  if (!p.timed) return;
  const ReportOptions& o = p.o;
  RSection s = section("time", "Bus bandwidth over time");
  s.note = "Per communicator, the busiest (op, size) groups; each point is the median busbw of a time bin. "
           "Shaded: change points (rolling median shift); red: the worst single-op outliers.";
  if (p.m.comms_with_busbw > o.max_comm_charts)
    s.note += " Showing the " + std::to_string(o.max_comm_charts) + " busiest of " + std::to_string(p.m.comms_with_busbw) + " communicators.";
  for (std::uint64_t c : p.m.charted) {
    auto it = p.m.comm.series.find(c);
    std::size_t npts = it == p.m.comm.series.end() ? 0 : it->second.second;
    std::string bands, marks;
    time_marks(p, c, bands, marks, npts);
    s.plots.add_plot("{\"type\":\"line\",\"title\":" + q(comm_display(c, p.res) + ": busbw over time") +
                     ",\"xlabel\":\"seconds since the first op\",\"ylabel\":\"busbw (GB/s)\",\"series\":[" +
                     (it == p.m.comm.series.end() ? std::string() : it->second.first) + "],\"bands\":[" + bands +
                     "],\"marks\":[" + marks + "]}",
                     npts);
  }
  out.push_back(std::move(s));
}

// Mean lateness per rank and time bin of the collective instances with several ranks (CommPass).
void lateness_heatmap(const Page& p, RSection& s) {
  const CommPass& cp = p.m.comm;
  if (cp.instances == 0) return;
  const std::size_t bins = p.m.heat_bins;
  const double span = std::max(1.0, static_cast<double>(p.m.t1 - p.m.g.t0));
  std::string rows;
  std::size_t cells = 0;
  for (std::size_t g = 0; g < p.gm.gpus.size(); ++g) {
    rows += g ? ",[" : "[";
    for (std::size_t b = 0; b < bins; ++b) {
      const std::uint32_t n = cp.heat_cnt[g * bins + b];
      cells += n != 0;
      if (b) rows += ',';
      rows += n ? num(static_cast<double>(cp.heat_sum_ns[g * bins + b]) / 1000.0 / n) : std::string("null");
    }
    rows += "]";
  }
  s.plots.add_plot("{\"type\":\"heatmap\",\"title\":\"mean lateness per rank (us)\",\"xlabel\":\"seconds since the first op\","
                   "\"rows\":" + str_array(p.gpu_labels) + ",\"x0\":0,\"dx\":" + num(span / static_cast<double>(bins) / 1e9) +
                   ",\"zlabel\":\"lateness (us)\",\"values\":[" + rows + "]}",
                   cells);
}

// The stragglers analysis's ranks, most significant first.
RTable lateness_table(const Page& p) {
  const ReadResult& res = p.res;
  static const StragglerResult kNone;
  const auto* found = p.detail<StragglerResult>("stragglers");
  const StragglerResult& sr = found ? *found : kNone;
  RTable t;
  t.title = "Ranks by lateness";
  t.columns = {"communicator", "rank", "host", "instances", "last %", "chance %", "z", "mean margin when last (us)",
               "mean lateness (us)", "clock offset (us)", "flag"};
  std::vector<const RankLateness*> rl;
  for (const auto& r : sr.ranks) rl.push_back(&r);
  std::sort(rl.begin(), rl.end(), [](auto* a, auto* b) { return a->z > b->z; });
  for (std::size_t i = 0; i < rl.size() && i < 30; ++i) {
    const auto& r = *rl[i];
    t.rows.push_back({q(comm_display(r.comm, res)), std::to_string(r.rank), q(r.host), std::to_string(r.ops),
                      num(100.0 * static_cast<double>(r.last) / static_cast<double>(std::max<std::uint64_t>(1, r.ops))),
                      num(100.0 / std::max(2, r.nranks)), num(r.z), num(r.last_margin_us), num(r.mean_lateness_us),
                      num(r.clock_offset_us),
                      q(r.flagged ? "LATE" : "")});
  }
  t.note = "Top 30 by z (how far above chance a rank is last); nccl-inspector stragglers has the rest.";
  return t;
}

void stragglers_section(const Page& p, std::vector<RSection>& out) {
  if (!p.timed) return;
  RSection s = section("stragglers", "Stragglers: lateness per rank over time");
  s.note = "Lateness of a rank in a collective instance (comm, op, seq), measured without clocks: the longest kernel "
           "time of the instance minus the rank's own (the ranks end together, so the late rank waits least); "
           "instances not GPU-timed on every rank are left out. "
           "Cell: the mean over the rank's instances in that time bin. A late rank is a bright row.";
  lateness_heatmap(p, s);
  s.tables.add(lateness_table(p).json());
  out.push_back(std::move(s));
}
// Busy time per channel id, per comm (the first 8 comms in comm order).
void channel_busy_chart(const Page& p, RSection& s) {
  const auto& busy = p.m.scan.ch_busy_ns;
  if (busy.empty()) return;
  std::set<int> chans;
  for (const auto& [c, m] : busy)
    for (const auto& [ch, ns] : m) chans.insert(ch);
  std::vector<std::string> cats;
  for (int c : chans) cats.push_back("ch " + std::to_string(c));
  std::string series;
  std::size_t ns = 0, nvals = 0;
  for (std::uint64_t c : p.gm.comms) {
    auto it = busy.find(c);
    if (it == busy.end() || ns >= 8) continue;
    std::string v;
    std::size_t k = 0;
    for (int ch : chans) {
      auto jt = it->second.find(ch);
      v += (k++ ? "," : "") + num(jt == it->second.end() ? 0.0 : static_cast<double>(jt->second) / 1e6);
      ++nvals;
    }
    series += (ns++ ? "," : "") + std::string("{\"name\":") + q(comm_series_name(c, p.res)) + ",\"values\":[" + v + "]}";
  }
  s.plots.add_plot("{\"type\":\"bar\",\"stacked\":true,\"title\":\"busy time per channel (all ranks)\",\"ylabel\":\"busy (ms)\","
                   "\"categories\":" + str_array(cats) + ",\"series\":[" + series + "]}",
                   nvals);
}

// Median channel balance per rank (ops with several channels).
void channel_balance_chart(const Page& p, RSection& s) {
  std::string v;
  std::size_t nvals = 0;
  const auto& bal = p.m.proc.balance;
  for (std::size_t g = 0; g < bal.size(); ++g) {
    v += (g ? "," : "") + num(bal[g]);
    nvals += std::isfinite(bal[g]);
  }
  s.plots.add_plot("{\"type\":\"bar\",\"title\":\"median channel balance per rank\",\"ylabel\":\"min/max channel time\",\"ymax\":1,"
                   "\"categories\":" + str_array(p.gpu_labels) + ",\"series\":[{\"name\":\"ch_balance P50\",\"values\":[" + v + "]}]}",
                   nvals);
}

// One bar series per HCA over the ranks, the value of each rank by `value`
// (null when not finite); nvals counts the values shown.
template <class V, class F>
std::string hca_series(const std::map<std::string, std::vector<V>>& dev, F value, std::size_t& nvals) {
  std::string series;
  std::size_t ns = 0;
  for (const auto& [d, v] : dev) {
    std::string vs;
    for (std::size_t g = 0; g < v.size(); ++g) {
      if (g) vs += ',';
      const double x = value(v[g]);
      vs += num(x);
      nvals += std::isfinite(x);
    }
    series += (ns++ ? "," : "") + std::string("{\"name\":") + q("HCA " + d) + ",\"values\":[" + vs + "]}";
  }
  return series;
}

// Network bytes per rank and HCA.
void hca_bytes_chart(const Page& p, RSection& s) {
  if (p.m.proc.hca_bytes.empty()) return;
  std::size_t nvals = 0;
  const std::string series =
      hca_series(p.m.proc.hca_bytes, [](std::uint64_t b) { return static_cast<double>(b) / 1e9; }, nvals);
  s.plots.add_plot("{\"type\":\"bar\",\"stacked\":true,\"title\":\"network bytes per rank and HCA\",\"ylabel\":\"GB\","
                   "\"categories\":" + str_array(p.gpu_labels) + ",\"series\":[" + series + "]}",
                   nvals);
}

// Send bandwidth on the wire per rank and HCA (hcas[].wire_us): the evidence
// of a slow NIC (anomalies' slow_hca).
void hca_wire_chart(const Page& p, RSection& s) {
  if (p.m.proc.wire_gbs.empty()) return;
  std::size_t nvals = 0;
  const std::string series = hca_series(p.m.proc.wire_gbs, [](double g) { return g; }, nvals);
  s.plots.add_plot("{\"type\":\"bar\",\"title\":\"send bandwidth on the wire per rank and HCA (median of ops "
                   "sending >= 256 KiB)\",\"ylabel\":\"GB/s\",\"categories\":" + str_array(p.gpu_labels) +
                       ",\"series\":[" + series + "]}",
                   nvals);
}

void channels_section(const Page& p, std::vector<RSection>& out) {
  RSection s = section("channels", "Channel and HCA balance");
  s.note = "Channel busy time from ch_times (NCCL_INSPECTOR_DUMP_VERBOSE=1); channel balance = shortest / longest channel "
           "of an op (1 = balanced); HCA bytes and send bandwidth on the wire from NetPlugin events (NCCL_INSPECTOR_ENABLE_NET=1; "
           "bandwidth needs IB QP events, docs/log-format.md).";
  if (p.m.scan.ch_capped)
    s.note += " Channel busy time is not shown: the logs hold more than " +
              std::to_string(ViewSink::kMaxChannelEntries) + " channel times.";
  channel_busy_chart(p, s);
  channel_balance_chart(p, s);
  hca_bytes_chart(p, s);
  hca_wire_chart(p, s);
  if (s.plots.n == 0) s.note += " No channel or HCA detail in these logs.";
  out.push_back(std::move(s));
}

void occupancy_section(const Page& p, std::vector<RSection>& out) {
  if (!p.timed) return;
  const auto& gpu_labels = p.gpu_labels;
  RSection s = section("occupancy", "Communication occupancy and gaps between collectives");
  s.note = "Occupancy: the fraction of a rank's active span (first op start to last op end) covered by at least one op. "
           "Gaps: idle time between consecutive ops of a rank (the union of its communicators), i.e. pipeline bubbles "
           "or compute phases; whiskers P5-P95.";
  std::string occ;
  std::size_t nocc = 0;
  std::vector<std::string> boxes;
  RTable t;
  t.title = "Occupancy and gaps per rank";
  t.columns = {"rank", "ops", "span (s)", "busy (s)", "occupancy %", "gaps", "gap P50 (us)", "gap P90 (us)", "gap max (us)"};
  for (std::size_t g = 0; g < p.m.proc.occupancy.size(); ++g) {
    const ProcPass::Occupancy& oc = p.m.proc.occupancy[g];
    const double span = static_cast<double>(oc.span_ns);
    const double pct = span > 0 ? 100.0 * static_cast<double>(oc.busy_ns) / span : kNaN;
    occ += (g ? "," : "") + num(pct);
    nocc += std::isfinite(pct);
    if (oc.gaps) {
      std::string b = "[" + std::to_string(g);
      for (double v : oc.gap_box) b += "," + num(v);
      boxes.push_back(b + "," + std::to_string(oc.gaps) + "]");
    }
    t.rows.push_back({q(gpu_labels[g]), std::to_string(oc.ops), num(span / 1e9), num(static_cast<double>(oc.busy_ns) / 1e9),
                      num(pct), std::to_string(oc.gaps), oc.gaps ? num(oc.gap_box[2]) : "null",
                      oc.gaps ? num(oc.gap_p90) : "null", oc.gaps ? num(oc.gap_max) : "null"});
  }
  s.plots.add_plot("{\"type\":\"bar\",\"title\":\"communication occupancy per rank\",\"ylabel\":\"% of the rank's span\",\"ymax\":100,"
                   "\"categories\":" + str_array(gpu_labels) + ",\"series\":[{\"name\":\"occupancy %\",\"values\":[" + occ + "]}]}",
                   nocc);
  s.plots.add_plot("{\"type\":\"box\",\"ylog\":true,\"title\":\"gaps between consecutive ops per rank\",\"ylabel\":\"gap (us)\","
                   "\"categories\":" + str_array(gpu_labels) + ",\"series\":[" + series_box("gaps", boxes) + "]}",
                   boxes.size());
  s.tables.add(t.json());
  out.push_back(std::move(s));
}


// A JSON value of a result table's cell.
std::string json_cell(const Cell& c) {
  switch (c.kind) {
    case Cell::kStr: return q(c.s);
    case Cell::kNum: return num(c.d);
    case Cell::kInt: return std::to_string(c.i);
    default: return "null";
  }
}

// The result tables of every registered analysis that asks for a section of its own.
void analysis_sections(const Page& p, std::vector<RSection>& out) {
  for (const auto& ran : p.m.analyses) {
    if (!ran.analysis->tables_in_report() || ran.result.report.sections.empty()) continue;
    RSection s = section(std::string(ran.analysis->name()), std::string(ran.analysis->help()));
    for (const auto& sec : ran.result.report.sections) {
      RTable t;
      t.title = sec.title;
      t.columns = sec.table.columns;
      for (const auto& row : sec.table.rows) {
        std::vector<std::string> r;
        for (const auto& c : row) r.push_back(json_cell(c));
        t.rows.push_back(std::move(r));
      }
      for (const auto& n : sec.notes) t.note += (t.note.empty() ? "" : " ") + n;
      s.tables.add(t.json());
    }
    out.push_back(std::move(s));
  }
}

// The page's sections, in order; each adds nothing when it has nothing to show.
using SectionFn = void (*)(const Page&, std::vector<RSection>&);
constexpr SectionFn kSections[] = {&health_section,     &busbw_section,   &size_section,
                                   &latency_section,    &phases_section,  &tags_section,
                                   &time_section,
                                   &stragglers_section, &channels_section, &occupancy_section,
                                   &analysis_sections};

// The input directories, for the page's header.
std::string input_dirs(const ReadResult& res) {
  std::set<std::string> dirs;
  for (const auto& f : res.files) {
    const auto p = f.path.find_last_of('/');
    dirs.insert(p == std::string::npos ? "." : f.path.substr(0, p));
  }
  std::string inputs;
  for (const auto& d : dirs) inputs += (inputs.empty() ? "" : ", ") + d;
  return inputs;
}

// The data block: the page's header fields and every section.
std::string data_json(const Page& p, const std::vector<RSection>& sections, const ReportStats& st) {
  const ReportOptions& o = p.o;
  const ReadResult* base_res = o.baseline_res;
  std::string dj = "{\"title\":" + q(o.title) + ",\"inputs\":" + q(input_dirs(p.res)) + ",\"baseline\":" +
                   (base_res ? q(std::to_string(base_res->files.size()) + " file(s), " + std::to_string(base_res->ops) + " ops")
                             : std::string("null")) +
                   ",\"t0\":" + q(p.timed ? iso(p.m.g.t0) : std::string()) + ",\"expected_plots\":" + std::to_string(st.plots) +
                   ",\"expected_points\":" + std::to_string(st.points) + ",\"plotly\":" + q(o.plotly_label) +
                   ",\"sections\":[";
  for (std::size_t i = 0; i < sections.size(); ++i) dj += (i ? "," : "") + sections[i].json();
  dj += "]}";
  // Inside <script>: "<" only occurs within JSON strings, where \u003c is the same character.
  std::string safe;
  safe.reserve(dj.size() + 64);
  for (char c : dj) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  return safe;
}

// The HTML around the data block, Plotly.js and the page's script.
void write_page(const std::string& data, const ReportOptions& o, std::ostream& out, ReportStats& st) {
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
          "style-src 'unsafe-inline'; img-src data:\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  for (char c : o.title) html += c == '<' ? std::string("&lt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
  html += "</title>\n<style>";
  html += kReportCss;
  html += "</style></head>\n<body>\n<div id=\"app\"><noscript>This report draws its charts with JavaScript.</noscript></div>\n"
          "<script type=\"application/json\" id=\"ni-data\">";
  html += data;
  html += "</script>\n<script id=\"ni-plotly\">\n";
  st.data_bytes = data.size();
  out << html;
  st.bytes = html.size();
  // Plotly.js verbatim, license banner first; only an end tag inside it would end the element early.
  const std::string plotly = script_safe(o.plotly_js);
  out << plotly;
  html = "\n</script>\n<script>";
  html += kReportJs;
  html += "</script>\n</body></html>\n";
  out << html;
  st.bytes += plotly.size() + html.size();
}

}  // namespace

ReportStats write_report_model(const ReportModel& m, const ReadResult& res, const ReportOptions& o, std::ostream& out) {
  if (o.plotly_js.empty()) throw std::invalid_argument("write_report: no Plotly.js bundle given");
  ReportStats st;
  const Page p(m, res, o);
  std::vector<RSection> sections;
  for (SectionFn add : kSections) add(p, sections);
  for (const auto& s : sections) {
    st.plots += s.plots.n;
    st.tables += s.tables.n;
    st.points += s.plots.total_points;
  }
  write_page(data_json(p, sections, st), o, out, st);
  return st;
}

ReportStats write_report(const ViewSink& data, const ReadResult& res, const ReportOptions& o, std::ostream& out) {
  if (o.plotly_js.empty()) throw std::invalid_argument("write_report: no Plotly.js bundle given");
  // The folds of report_model.h over every op at once: one batch of every
  // communicator, one of every process, as the bounded report makes many.
  ReportModel m;
  m.baseline = o.baseline;
  const std::vector<Op>& ops = data.coll.ops;
  auto tagged = data.tagged.begin();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    while (tagged != data.tagged.end() && tagged->first < i) ++tagged;
    m.scan.add(ops[i], tagged != data.tagged.end() && tagged->first == i ? tagged->second : 0);
    if (i < data.ch_end.size())
      for (std::size_t e = data.ch_begin(i); e < data.ch_end[i]; ++e)
        m.scan.add_channel(ops[i].comm_hash, data.ch[e].channel, data.ch[e].dur_us);
  }
  m.scan.ch_capped = data.channel_capped;
  m.plan(res, nullptr, o);  // the ops are calibrated already (ReportOptions::calibration)
  m.analyses = run_op_analyses(data.coll, res);
  const std::vector<std::uint32_t> op_gpu = m.gpus_of(ops);
  m.comm.add(m, ops, op_gpu);
  if (m.prepare_marks()) m.comm.marks(ops);
  m.proc.add(m, ops, data.coll.extra.size() == ops.size() ? &data.coll.extra : nullptr, op_gpu);
  return write_report_model(m, res, o, out);
}

}  // namespace ni::analysis
