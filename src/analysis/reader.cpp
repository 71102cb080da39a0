// read_logs: the reader's driver. Worker threads take files from a shared index
// and read each whole (reader_record.h: decode, scan, map, hand ops to the
// worker's sink); the totals of the read are summed from the files afterwards.
#include "src/analysis/reader.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <filesystem>
#include <system_error>
#include <thread>

#include "src/analysis/reader_decode.h"
#include "src/analysis/reader_progress.h"
#include "src/analysis/reader_record.h"

namespace ni::analysis {

namespace {

namespace rd = reader_detail;

// The read's totals: sums over its files, and the first non-empty name of each comm.
void add_totals(ReadResult& res) {
  for (const auto& f : res.files) {
    res.ops += f.ops;
    res.lines += f.lines;
    res.bad_lines += f.bad_lines;
    res.long_lines += f.long_lines;
    res.no_duration += f.no_duration;
    res.unknown_records += f.unknown_records;
    res.truncated_files += f.truncated ? 1 : 0;
    res.corrupt_files += f.corrupt ? 1 : 0;
    res.failed_files += f.failed ? 1 : 0;
    res.uncompressed_bytes += f.uncompressed_bytes;
    res.compressed_bytes += f.compressed_bytes;
    for (const auto& c : f.comms) {
      auto& n = res.comm_names[c.comm_hash];
      if (n.empty()) n = c.name;
    }
  }
}

// What a failed file gives back: its own collections (marks, clock records,
// schema problems), which may be what exhausted memory. Its ops already in the
// sink and its comms (names) stay.
void release(FileInfo& info) noexcept {
  std::vector<MarkInfo>().swap(info.marks);
  std::vector<MarkInfo>().swap(info.tag_names);
  std::vector<ClockInfo>().swap(info.clocks);
  std::vector<std::string>().swap(info.problems);
}

// One file; a failure of ours while reading it (memory exhausted, a buffer the
// system would not give) ends that file's read, never the process's or the
// other files': the ops it handed to the sink so far stay, and the file says why.
// In a concatenation the failure is the log being read when it happened.
void read_one(FileInfo& input, std::uint32_t idx, OpSink& sink, bool validate, rd::Decoder& decoder,
              std::atomic<std::uint64_t>& done, const rd::NextFile& next) noexcept {
  FileInfo* cur = &input;
  try {
    const rd::NextFile mine = [&](const std::string& path, std::uint32_t& i) {
      FileInfo* f = next(path, i);
      if (f != nullptr) cur = f;
      return f;
    };
    rd::read_file(input, idx, sink, validate, decoder, done, &mine);
  } catch (const std::bad_alloc&) {
    FileInfo& info = *cur;
    info.failed = true;
    release(info);
    try {
      info.error = "out of memory after " + std::to_string(info.lines) +
                   " lines: the rest of the file is unread, its marks and clock records are dropped";
    } catch (...) {  // no memory even for the message: failed says it
    }
  } catch (const std::exception& e) {
    FileInfo& info = *cur;
    info.failed = true;
    release(info);
    try {
      info.error = std::string("read failed after ") + std::to_string(info.lines) + " lines: " + e.what();
    } catch (...) {
    }
  }
}

}  // namespace

int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(std::min(n, 64u));
}

ReadResult read_logs(const std::vector<std::string>& files, const ReadOptions& options,
                     const std::vector<OpSink*>& sinks) {
  ReadResult res;
  res.files.resize(files.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    res.files[i].path = files[i];
    std::error_code ec;
    const auto sz = std::filesystem::file_size(files[i], ec);
    if (!ec) total += sz;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<std::uint64_t> done{0};  // compressed bytes read: the progress bar's
  std::atomic<std::size_t> next{0};    // the next file to read
  // The further logs of inputs that hold several (concatenated): indices after
  // the inputs', in the order they are met; a deque keeps them in place while
  // other threads add theirs.
  std::mutex more_mu;
  std::deque<FileInfo> more;
  const rd::NextFile next_file = [&](const std::string& path, std::uint32_t& idx) -> FileInfo* {
    const std::lock_guard<std::mutex> lock(more_mu);
    if (files.size() + more.size() >= std::numeric_limits<std::uint32_t>::max()) return nullptr;
    idx = static_cast<std::uint32_t>(files.size() + more.size());
    FileInfo& f = more.emplace_back();
    f.path = path;
    return &f;
  };
  {
    const bool show = options.progress == 1 || (options.progress < 0 && ::isatty(2));
    rd::ReadProgress progress(show, total, done);
    auto worker = [&](OpSink* sink) {
      rd::Decoder decoder;  // its buffers are reused for the worker's files
      // Relaxed: only hands out indices; each file's results are published by the join below.
      for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < files.size();)
        read_one(res.files[i], static_cast<std::uint32_t>(i), *sink, options.validate, decoder, done, next_file);
    };
    const std::size_t nthreads = std::max<std::size_t>(1, std::min(sinks.size(), files.size()));
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < nthreads; ++t) {
      try {
        threads.emplace_back(worker, sinks[t]);
      } catch (const std::exception&) {
        break;  // no more threads to be had: the ones started (and this one) read every file
      }
    }
    worker(sinks[0]);
    for (auto& t : threads) t.join();
  }
  for (FileInfo& f : more) res.files.push_back(std::move(f));
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  add_totals(res);
  return res;
}

}  // namespace ni::analysis
