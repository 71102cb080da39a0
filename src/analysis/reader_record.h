// Record mapping: one file's lines -> records. Each line's fields (found by the
// scanner, reader_scan.h) are mapped into a Line (reader_fields.h), then the
// record is dispatched by its "type": ops become Op (+ OpDetail when the
// sink asks) and go to the sink; meta, comm, stats, mark, clock and end records
// fill the FileInfo.
//
// Contract: read_file() reads one whole file on the calling thread and calls
// sink.on_op for each op with a duration, in file order. Damage is counted in
// info (bad lines, problems when validating, truncation), never thrown.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "src/analysis/reader.h"
#include "src/analysis/reader_decode.h"

namespace ni::analysis::reader_detail {

// Where the next log of a concatenation goes: a new FileInfo with the path
// given ("INPUT (log 2)") and its index in the read (Op::file_idx); nullptr
// when there is none to be had.
using NextFile = std::function<FileInfo*(const std::string& path, std::uint32_t& idx)>;

// Reads info.path (info.path set, the rest default) with the worker's decoder;
// idx is the file's index in the read (Op::file_idx). A meta record after the
// first line of a log that began with its own (or had ops) starts another log
// (files concatenated into one stream): with `next`, its lines go to the file
// next gives; without, they stay in info (validate then reports the misplaced
// meta record, as it does for one after bad lines alone).
void read_file(FileInfo& info, std::uint32_t idx, OpSink& sink, bool validate, Decoder& decoder,
               std::atomic<std::uint64_t>& progress, const NextFile* next = nullptr);

// Follows one log file that a running plugin is still writing (`watch`): each
// poll() reads the bytes appended since the last one and hands the sink the
// ops of its complete lines (a line cut at the current end waits for its rest).
// Gzip is inflated as one stream across polls, member after member, so a
// member is read as far as it was written. info must outlive the Follower.
class Follower {
 public:
  Follower(FileInfo& info, std::uint32_t idx, OpSink& sink);
  ~Follower();
  Follower(const Follower&) = delete;
  Follower& operator=(const Follower&) = delete;
  // Reads what was appended, at most max_bytes of it; returns the bytes read.
  // The file is opened for the poll only. After its end record it is done
  // (stopped(), no error); a file that cannot be opened, shrank or holds data
  // that does not inflate stops being followed too (info.error says why).
  std::size_t poll(std::size_t max_bytes = std::size_t{64} << 20);
  bool stopped() const;
  // Bytes the file had at the last poll that it has not read yet.
  std::uint64_t behind() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ni::analysis::reader_detail
