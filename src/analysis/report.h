// `report`: one self-contained HTML file (no network requests, works offline)
// with the views people look at before tables: busbw per op and communicator,
// busbw vs message size (against a baseline), latency percentiles, busbw over
// time with change points and outliers, a rank x time lateness heatmap,
// channel and HCA balance, occupancy and gaps between collectives per rank,
// a health panel with every registered analysis's findings (analysis.h), and a
// section for each registered analysis that shows its tables. The data is one JSON block; the charts are drawn by
// Plotly.js, inlined into the page (the CLI passes the bundle it embeds,
// plotly_bundle.h), from that data by a short script (report_assets.cpp).
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "src/analysis/report_model.h"
#include "src/analysis/view.h"

namespace ni::analysis {

struct ClockCalibration;  // stragglers.h
struct ReportModel;       // report_model.h

struct ReportOptions {
  std::string title = "nccl-inspector report";
  std::size_t max_comm_charts = 12;  // busbw-over-time charts (the busiest communicators)
  std::size_t time_bins = 200;       // points per series over time
  std::size_t heat_bins = 120;       // lateness heatmap columns
  std::string_view plotly_js;  // the Plotly.js bundle to inline (required: write_report throws without one)
  std::string plotly_label;    // its name and version, for the page's footer
  const ClockCalibration* calibration = nullptr;  // applied to the ops (the health section says so)
  std::map<std::uint64_t, std::string> tag_map;    // --tag-map: user tag names over the logs' tag records
  // --baseline: its busbw vs size curves (report_model.h) and read result; null: none.
  const SizeCurves* baseline = nullptr;
  const ReadResult* baseline_res = nullptr;
};

struct ReportStats {
  std::size_t plots = 0;   // charts with data
  std::size_t tables = 0;
  std::uint64_t bytes = 0;       // the whole page
  std::uint64_t data_bytes = 0;  // the JSON data block
  std::size_t points = 0;        // data points over all charts (what the page must draw)
};

// The page of the ops in memory (calibrated as o.calibration says).
ReportStats write_report(const ViewSink& data, const ReadResult& res, const ReportOptions& o, std::ostream& out);
// The page of the report's folds (report_model.h): what write_report and the
// bounded report (report_bounded.h) both write.
ReportStats write_report_model(const ReportModel& m, const ReadResult& res, const ReportOptions& o, std::ostream& out);

// The page's script (data -> Plotly traces) and style sheet (report_assets.cpp).
extern const char* const kReportJs;
extern const char* const kReportCss;

}  // namespace ni::analysis
