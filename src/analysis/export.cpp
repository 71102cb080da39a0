#include "src/analysis/export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>

#include "src/analysis/analysis.h"
#include "src/analysis/table.h"

namespace ni::analysis {

const std::vector<std::string>& export_columns() {
  static const std::vector<std::string> cols = {
      "host", "pid", "kind", "comm_hash", "comm_name", "rank", "nranks", "nnodes", "func", "seq",
      "peer", "bytes", "size_bucket", "algo", "proto", "nchannels", "start_wall_ns", "dur_us",
      "busbw_gbs", "ch_balance", "timing", "reclaimed", "partial", "file", "user_tag"};
  return cols;
}

namespace {
class ExportSink : public OpSink {
 public:
  ExportSink(ExportFormat f, std::ostream& out, std::mutex& mu) : f_(f), out_(out), mu_(mu) {}
  ~ExportSink() override { flush(); }
  void merge(ExportSink&&) {}
  bool wants_tag() const override { return true; }
  void on_op(const Op& op, const OpDetail* detail, const FileInfo& file) override {
    const std::uint64_t tag = detail != nullptr ? detail->user_tag : 0;
    if (op.file_idx != file_) {
      file_ = op.file_idx;
      host_ = f_ == ExportFormat::kCsv ? csv_escape(file.host) : json_escape(file.host);
      path_ = f_ == ExportFormat::kCsv ? csv_escape(file.path) : json_escape(file.path);
    }
    std::string name;
    for (const auto& c : file.comms)
      if (c.comm_hash == op.comm_hash) {
        name = c.name;
        break;
      }
    char num[512];
    const std::string hash = hex_hash(op.comm_hash);
    const bool bw = op.has_busbw();
    const bool chb = op.ch_balance >= 0;
    if (f_ == ExportFormat::kCsv) {
      buf_ += host_;
      std::snprintf(num, sizeof num, ",%lld,%s,%s,", static_cast<long long>(file.pid),
                    std::string(to_string(op.kind)).c_str(), hash.c_str());
      buf_ += num;
      buf_ += csv_escape(name);
      std::snprintf(num, sizeof num, ",%d,%d,%d,%s,%llu,%d,%llu,%d,%s,%s,%d,%s,%.3f,", op.rank, op.nranks,
                    op.nnodes, std::string(to_string(op.func)).c_str(),
                    static_cast<unsigned long long>(op.seq), op.peer,
                    static_cast<unsigned long long>(op.bytes), size_bucket(op.bytes),
                    std::string(to_string(op.algo)).c_str(), std::string(proto_label(op.algo, op.proto)).c_str(),
                    op.nchannels, op.has_start() ? std::to_string(op.start_wall_ns).c_str() : "", op.dur_us);
      buf_ += num;
      if (bw) {
        std::snprintf(num, sizeof num, "%.6g", op.busbw_gbs);
        buf_ += num;
      }
      buf_ += ',';
      if (chb) {
        std::snprintf(num, sizeof num, "%.4f", static_cast<double>(op.ch_balance));
        buf_ += num;
      }
      std::snprintf(num, sizeof num, ",%s,%d,%d,", std::string(to_string(op.timing)).c_str(),
                    (op.flags & kFlagReclaimed) ? 1 : 0, (op.flags & kFlagPartial) ? 1 : 0);
      buf_ += num;
      buf_ += path_;
      buf_ += ',';
      if (tag != 0) buf_ += std::to_string(tag);
      buf_ += '\n';
    } else {
      buf_ += "{\"host\":\"" + host_;
      std::snprintf(num, sizeof num, "\",\"pid\":%lld,\"kind\":\"%s\",\"comm_hash\":\"%s\",\"comm_name\":\"",
                    static_cast<long long>(file.pid), std::string(to_string(op.kind)).c_str(), hash.c_str());
      buf_ += num;
      buf_ += json_escape(name);
      std::snprintf(num, sizeof num,
                    "\",\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,\"func\":\"%s\",\"seq\":%llu,\"peer\":%d,"
                    "\"bytes\":%llu,\"size_bucket\":%d,\"algo\":\"%s\",\"proto\":\"%s\",\"nchannels\":%d,"
                    "\"start_wall_ns\":%s,\"dur_us\":%.3f,",
                    op.rank, op.nranks, op.nnodes, std::string(to_string(op.func)).c_str(),
                    static_cast<unsigned long long>(op.seq), op.peer, static_cast<unsigned long long>(op.bytes),
                    size_bucket(op.bytes), std::string(to_string(op.algo)).c_str(),
                    std::string(proto_label(op.algo, op.proto)).c_str(), op.nchannels,
                    op.has_start() ? std::to_string(op.start_wall_ns).c_str() : "null", op.dur_us);
      buf_ += num;
      if (bw) std::snprintf(num, sizeof num, "\"busbw_gbs\":%.6g,", op.busbw_gbs);
      else std::snprintf(num, sizeof num, "\"busbw_gbs\":null,");
      buf_ += num;
      if (chb) std::snprintf(num, sizeof num, "\"ch_balance\":%.4f,", static_cast<double>(op.ch_balance));
      else std::snprintf(num, sizeof num, "\"ch_balance\":null,");
      buf_ += num;
      std::snprintf(num, sizeof num, "\"timing\":\"%s\",\"reclaimed\":%s,\"partial\":%s,\"file\":\"",
                    std::string(to_string(op.timing)).c_str(), (op.flags & kFlagReclaimed) ? "true" : "false",
                    (op.flags & kFlagPartial) ? "true" : "false");
      buf_ += num;
      buf_ += path_;
      buf_ += tag != 0 ? "\",\"user_tag\":" + std::to_string(tag) + "}\n" : std::string("\",\"user_tag\":null}\n");
    }
    if (buf_.size() > (1u << 20)) flush();
  }
  void flush() {
    if (buf_.empty()) return;
    std::lock_guard<std::mutex> g(mu_);
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  ExportFormat f_;
  std::ostream& out_;
  std::mutex& mu_;
  std::string buf_;
  std::uint32_t file_ = ~0u;
  std::string host_, path_;
};
}  // namespace

ReadResult export_ops(const std::vector<std::string>& files, ExportFormat f, int threads,
                      const ReadOptions& ro, std::ostream& out) {
  std::mutex mu;
  if (f == ExportFormat::kCsv) {
    const auto& cols = export_columns();
    for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i];
    out << "\n";
  }
  ReadResult res;
  {
    std::vector<std::unique_ptr<ExportSink>> sinks;
    std::vector<OpSink*> ptrs;
    for (int i = 0; i < std::max(1, threads); ++i) {
      sinks.push_back(std::make_unique<ExportSink>(f, out, mu));
      ptrs.push_back(sinks.back().get());
    }
    res = read_logs(files, ro, ptrs);
  }
  out.flush();
  return res;
}

// ---- the registered analysis

namespace {

// `export` streams rows as it reads, so it writes its output itself.
class ExportAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "export"; }
  std::string_view help() const override { return "flat per-op table (csv or jsonl) for pandas/Spark/DuckDB"; }
  Input input() const override { return Input::kFiles; }
  std::string_view default_format() const override { return "csv"; }
  std::string_view formats() const override { return "csv | jsonl"; }
  std::string check(const std::string& format) override {
    if (format == "csv") format_ = ExportFormat::kCsv;
    else if (format == "jsonl" || format == "json") format_ = ExportFormat::kJsonl;
    else return "export --format must be csv or jsonl";
    return {};
  }
  AnalysisResult run_files(const FilesInput& in) override {
    AnalysisResult r;
    r.done = true;
    ReadResult res;
    if (in.output.empty() || in.output == "-") {
      std::ios::sync_with_stdio(false);
      res = export_ops(in.files, format_, in.threads, in.ro, std::cout);
    } else {
      std::ofstream out(in.output, std::ios::binary);
      if (!out) {
        r.exit = kExitUsage;
        r.error = "cannot write " + in.output;
        return r;
      }
      res = export_ops(in.files, format_, in.threads, in.ro, out);
    }
    r.exit = check_read(res) ? kExitOk : kExitUsage;
    return r;
  }

 private:
  ExportFormat format_ = ExportFormat::kCsv;
};

}  // namespace

std::unique_ptr<Analysis> make_export_analysis() { return std::make_unique<ExportAnalysis>(); }

}  // namespace ni::analysis
