// Record mapping (see reader_record.h): fields -> Line -> Op / FileInfo.
#include "src/analysis/reader_record.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "include/nccl_inspector/schema.h"
#include "src/analysis/reader_fields.h"
#include "src/analysis/reader_memo.h"
#include "src/analysis/reader_scan.h"
#include "src/analysis/reader_upstream.h"
#include "src/analysis/reader_values.h"

namespace ni::analysis::reader_detail {

namespace {

namespace sc = ni::schema;

constexpr std::size_t kMaxProblems = 50;

// Record kinds by their "type" string (kOp* are the op records).
enum class RecType : std::uint8_t { kOpColl, kOpP2p, kOpCe, kOther };
RecType rec_type(std::string_view t) {
  return t == sc::kTypeColl ? RecType::kOpColl
         : t == sc::kTypeP2p ? RecType::kOpP2p
         : t == sc::kTypeCe  ? RecType::kOpCe
                             : RecType::kOther;
}
std::uint8_t transport_code(std::string_view t) {
  return t == sc::kTransportNetwork ? 2 : t == sc::kTransportIntraNode ? 1 : 0;
}
Timing timing_of(std::string_view t) { return t.empty() ? Timing::kUnknown : parse_timing(t); }

// "op record without comm_hash" and the like (the validator's wording).
std::string without(std::string_view record, std::string_view key) {
  return std::string(record) + " record without " + std::string(key);
}

using Counts = std::vector<std::pair<std::string, std::uint64_t>>;

// A label or name kept to kMaxLabelBytes, cut before a UTF-8 character, never
// inside one (the outputs must stay valid UTF-8).
std::string cut_label(std::string_view s) {
  if (s.size() <= kMaxLabelBytes) return std::string(s);
  std::size_t n = kMaxLabelBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // s[n] continues a character
  return std::string(s.substr(0, n));
}

// One file: its line splitter, scanner state and memos, the Line being mapped.
class RecordReader final : public ChunkSink {
 public:
  RecordReader(FileInfo& info, std::uint32_t idx, OpSink& sink, bool validate, const NextFile* next = nullptr)
      : info_(&info), idx_(idx), sink_(sink), validate_(validate), next_(next), path_(info.path) {
    want_detail_ = sink.wants_detail();
    want_tag_ = want_detail_ || sink.wants_tag();
    want_assembled_ = sink.wants_assembled() && !validate;
    fields_ = validate ? kOpFieldsAll : sink.op_fields();
  }

  void chunk(char* buf, std::size_t n) override {
    lines_.feed(
        buf, n, [this](const char* p, std::size_t len, bool last) { parse_line(p, len, last); },
        [this] { long_line(); });
  }
  void finish() {
    lines_.finish(
        *info_, [this](const char* p, std::size_t len, bool last) { parse_line(p, len, last); },
        [this] { long_line(); });
    close_groups();
  }
  // The file read last: the input's own, or the last of those its stream held.
  FileInfo& current() const { return *info_; }

  // Called by the scanners, once per field of the line. v by reference: copying
  // a FastVal stalled store forwarding.
  template <class V>
  [[gnu::always_inline]] inline void field(Field id, const V& v);

 private:
  void parse_line(const char* p, std::size_t len, bool last);
  // A line over kMaxLineBytes, skipped unread: a bad line of its own kind.
  void long_line() {
    ++info_->lines;
    ++info_->bad_lines;
    ++info_->long_lines;
    problem("longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB: skipped unread");
  }
  void reset_line() {
    // g++ writes this as `rep stos` over the Line's 720 bytes. A copy of a blank
    // Line in 16-byte blocks instead took a point off the parser's perf share but
    // no time that an interleaved A/B could see (16 runs each of `summary -j 1`,
    // 4 M records: min 2.98 against 3.14 CPU-s, median 3.84 against 3.63), so
    // the plain form stays.
    L_ = Line{};
    if (!dropped_.empty() || !filtered_.empty() || !faults_.empty()) {
      dropped_.clear();
      filtered_.clear();
      faults_.clear();
    }
    if (!started_.empty() || !stuck_.empty()) {
      started_.clear();
      stuck_.clear();
    }
  }
  void problem(const std::string& what) {
    if (!validate_ || info_->problems.size() >= kMaxProblems) return;
    info_->problems.push_back("line " + std::to_string(info_->lines) + ": " + what);
  }

  // ---- nested fields (parsed on demand)
  template <class V>
  void counts(const V& vin, Counts& out);
  template <class V>
  void job(const V& vin);
  template <class V>
  void hcas(const V& vin);
  template <class V>
  void ch_times(const V& vin);
  template <class V>
  void ch_slow(const V& vin);
  template <class V>
  void net(const V& vin);
  template <class V>
  void phases(const V& vin);
  template <class V>
  void upstream(const V& vin, void (*section)(dom::element, Line&));
  template <class V>
  void started(const V& vin);
  template <class V>
  void stuck(const V& vin);
  template <class V>
  void config(const V& vin);
  template <class V>
  void upstream_op(const V& vin, bool p2p);

  // ---- scalar fields with a shortcut on the fast path
  bool comm_hash_of(dom::element, std::string_view s, std::uint64_t& out) { return parse_hash(s, out); }
  bool comm_hash_of(const FastVal&, std::string_view s, std::uint64_t& out);
  void set_wall(dom::element v) { L_.has_wall = get_i64(v, L_.wall_ns); }
  void set_wall(const FastVal& v);
  void resolve_wall() {
    L_.wall_pending = false;
    L_.has_wall = get_i64(FastVal{'n', L_.wall_raw}, L_.wall_ns);
  }
  // A string field's parsed value; cached when the strings lie in the padded line buffer.
  template <class T, class Parse>
  T cached(ValueCache<T>& c, std::string_view s, Parse parse) {
    return padded_ ? c.get(s, parse) : parse(s);
  }

  // The P2P groups still open, assembled as they are (the file ended).
  void close_groups() {
    for (auto& [key, open] : p2p_groups_)
      for (const auto& [no, g] : open) assemble(key.first, key.second, no, g);
    p2p_groups_.clear();
    open_groups_ = open_parts_ = 0;
  }
  bool next_file();

  // ---- records
  void dispatch();
  void on_meta();
  void on_comm();
  void on_stats();
  void on_other(std::string_view t);
  void on_progress();
  void on_comm_end();
  CommRankProgress& progress_of(std::uint64_t hash, std::int64_t rank);
  void note_for_hangs(RecType rt);
  void on_op(RecType rt);
  void fill_op(RecType rt, Op& op);
  // The P2P parts of one launch group on one (comm, rank), until the group is
  // complete: it has the 2 n parts of an AlltoAll, it is the oldest when the
  // open groups hold too much, or the file ended. Parts of many groups
  // interleave: a dump cycle (100 ms by default) writes each thread's ring in
  // turn, and a part is in the ring of the thread that completed it
  // (launching or proxy thread, profiler-abi §9).
  struct Part {
    std::int64_t lo = 0, hi = 0;  // its GPU span on the wall clock (ns)
    std::int64_t bytes = 0;
    std::int32_t peer = -1;
    std::uint16_t nch = 0;
    bool send = false;
    std::uint8_t transport = 0;
  };
  struct P2pGroup {
    std::int32_t nranks = 0;
    std::uint16_t nnodes = 0;
    bool bad = false;  // a part no assembly can use, or more parts than an AlltoAll has
    Timing cpu = Timing::kGpu;  // a CPU-timed part's timing (kGpu: every part GPU-timed)
    bool desync = false;        // a part was CPU-timed because NCCL's stamps were out of step
    bool all_start = true;      // every part has its start
    std::uint64_t user_tag = 0; // the call's tag (its first part's; NCCL gives every part the call's)
    std::vector<Part> parts;
  };
  using GroupKey = std::pair<std::uint64_t, std::int32_t>;  // (comm, rank)
  // Bounds on what is held open, over all (comm, rank) of the file: ~2.5 MB.
  static constexpr std::size_t kOpenGroups = 4096, kOpenParts = 65536;
  void add_to_group(const Op& op, std::int64_t group, std::uint64_t user_tag);
  void assemble(std::uint64_t comm_hash, std::int32_t rank, std::int64_t group, const P2pGroup& g);
  void evict_oldest(const GroupKey& prefer, std::int64_t keep);
  void validate_op(const Op& op);
  const CommInfo* find_comm(std::uint64_t h);

  FileInfo* info_;  // the file being read: the next one after a concatenation's meta record
  std::uint32_t idx_;
  OpSink& sink_;
  bool validate_;
  const NextFile* next_;  // where a concatenated log's next file goes (nullptr: no split)
  const std::string path_;  // the input's
  int logs_ = 0;            // further logs met in it
  bool want_detail_ = false;
  bool want_tag_ = false;  // detail_.user_tag only (want_detail_ implies it)
  bool want_assembled_ = false;
  std::map<GroupKey, std::map<std::int64_t, P2pGroup>> p2p_groups_;  // (comm, rank) -> group number -> its parts
  std::size_t open_groups_ = 0, open_parts_ = 0;
  std::vector<std::int64_t> asm_send_, asm_recv_;  // assemble()'s per-peer bytes, reused
  std::uint32_t fields_ = kOpFieldsAll;
  LineSplitter lines_;
  dom::parser parser_;  // whole lines (fallback)
  NestedParser nested_;  // nested values of fast-path lines
  KeyMemos memos_;
  std::string job_id_own_;
  Line L_;
  Counts dropped_, filtered_, faults_;  // the stats record's counter objects
  std::vector<std::pair<std::string, std::uint64_t>> started_;  // a progress line's `started`
  std::vector<StuckOpInfo> stuck_;                               // and `stuck`
  std::array<std::uint32_t, 16> progress_cache_ = [] {  // positions in info_->progress (progress_of())
    std::array<std::uint32_t, 16> a{};
    a.fill(~0u);
    return a;
  }();
  OpDetail detail_;
  static constexpr std::size_t kCommCache = 16;
  std::array<std::uint32_t, kCommCache> comm_cache_ = [] {
    std::array<std::uint32_t, kCommCache> a{};
    a.fill(~0u);
    return a;
  }();
  // comm_hash strings in the plugin's form ("0x" + 16 hex digits) -> value.
  struct HashSlot {
    alignas(16) char hex[16] = {};
    std::uint64_t val = 0;
    bool valid = false;
  };
  std::array<HashSlot, 8> hash_cache_{};
  bool padded_ = false;  // the current Line's strings lie in a padded line buffer
  ValueCache<RecType> type_cache_;
  ValueCache<Func> func_cache_;
  ValueCache<Algo> algo_cache_;
  ValueCache<Proto> proto_cache_;
  ValueCache<Timing> timing_cache_;
  ValueCache<std::uint8_t> transport_cache_;
  // The last symmetric-kernel variant seen and its Algo (model.h sym_algo takes a lock).
  std::string last_variant_;
  Algo last_variant_algo_ = Algo::kUnknown;
  bool has_last_variant_ = false;
  Algo sym_algo_of(std::string_view variant) {
    if (!has_last_variant_ || variant != last_variant_) {
      last_variant_.assign(variant);
      last_variant_algo_ = sym_algo(variant);
      has_last_variant_ = true;
    }
    return last_variant_algo_;
  }
};

void RecordReader::parse_line(const char* p, std::size_t len, bool last) {
  // Skip blank lines (and a trailing '\r').
  while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' ')) --len;
  if (len == 0) return;
  ++info_->lines;
  reset_line();
  if (!validate_) {
    if (scan_flat(p, len, memos_, *this)) {
      padded_ = true;
      dispatch();
      padded_ = false;
      return;
    }
    reset_line();  // undo the partial fast parse; simdjson decides
    detail_.clear();
  }
  if (const auto err = scan_dom(parser_, p, len, *this)) {
    // A cut last line is the decoder's to judge (truncation, not a bad line).
    if (!last) problem(std::string("invalid JSON: ") + simdjson::error_message(err));
    ++info_->bad_lines;
    return;
  }
  dispatch();
}

template <class V>
[[gnu::always_inline]] inline void RecordReader::field(Field id, const V& v) {
  Line& L = L_;
  bool b = false;
  switch (id) {
    case Field::kNone: break;
    case Field::kAlgo: get_str(v, L.algo); break;
    case Field::kAbi: get_i64(v, L.abi); break;
    case Field::kBytes: L.has_bytes = get_u64(v, L.bytes); break;
    case Field::kBusbw: get_f64(v, L.busbw); break;
    case Field::kCommHash: {
      std::string_view s;
      if (get_str(v, s)) L.has_hash = comm_hash_of(v, s, L.comm_hash);
      else L.has_hash = get_u64(v, L.comm_hash);
      break;
    }
    case Field::kCommName: L.has_comm_name = get_str(v, L.comm_name); break;
    case Field::kCudaDev: get_i64(v, L.cuda_dev); break;
    case Field::kPciBusId: get_str(v, L.pci_bus_id); break;
    case Field::kChannels: if (fields_ & kOpFieldChannels) array_count(v, L.channels_len); break;
    case Field::kChBalance: if (fields_ & kOpFieldChBalance) get_f64(v, L.ch_balance); break;
    case Field::kChTimes: if (want_detail_) ch_times(v); break;
    case Field::kChSlow: if (want_detail_) ch_slow(v); break;
    case Field::kCollPerf: upstream_op(v, false); break;
    case Field::kDurUs: get_f64(v, L.dur_us); break;
    case Field::kDropped: counts(v, dropped_); break;
    case Field::kDroppedTotal: get_u64(v, L.dropped_total); break;
    case Field::kFunc: L.has_func = get_str(v, L.func); break;
    case Field::kFormat: get_str(v, L.format); break;
    case Field::kFormatVersion: get_i64(v, L.format_version); break;
    case Field::kFileSeq: get_i64(v, L.file_seq); break;
    case Field::kInstance: get_str(v, L.instance); break;
    case Field::kRecordsPending: get_u64(v, L.records_pending); break;
    case Field::kFiltered: counts(v, filtered_); break;
    case Field::kFaults: counts(v, faults_); break;
    case Field::kGraph: if (get_bool(v, b)) L.graph = b; break;
    case Field::kHost: get_str(v, L.host); break;
    case Field::kHcas: if (want_detail_) hcas(v); break;
    case Field::kHeader: upstream(v, upstream_header); break;
    case Field::kJob: job(v); break;
    case Field::kLabel: get_str(v, L.label); break;
    case Field::kMetadata: upstream(v, upstream_metadata); break;
    case Field::kNranks: get_i64(v, L.nranks); break;
    case Field::kNnodes: get_i64(v, L.nnodes); break;
    case Field::kNchannels: if (fields_ & kOpFieldChannels) get_i64(v, L.nchannels); break;
    case Field::kNet: if (want_detail_) net(v); break;
    case Field::kOpsCompleted: get_u64(v, L.ops_completed); break;
    case Field::kProto: get_str(v, L.proto); break;
    case Field::kPeer: get_i64(v, L.peer); break;
    case Field::kPid: get_i64(v, L.pid); break;
    case Field::kPluginVersion: get_str(v, L.plugin_version); break;
    case Field::kPartial: if (get_bool(v, b)) L.partial = b; break;
    case Field::kApiOnly: if (get_bool(v, b)) L.api_only = b; break;
    case Field::kKernelDesync: if (get_bool(v, b)) L.kernel_desync = b; break;
    case Field::kGroupNo: get_i64(v, L.group); break;
    case Field::kUserTag: get_u64(v, L.user_tag); break;
    case Field::kSym: if (get_bool(v, b)) L.sym = b; break;
    case Field::kKernelVariant: get_str(v, L.kernel_variant); break;
    case Field::kSymPlanTasks: get_u64(v, L.sym_plan_tasks); break;
    case Field::kPhases: phases(v); break;
    case Field::kP2pPerf: upstream_op(v, true); break;
    case Field::kRank: get_i64(v, L.rank); break;
    case Field::kReclaimed: if (get_bool(v, b)) L.reclaimed = b; break;
    case Field::kRecordsWritten: get_u64(v, L.records_written); break;
    case Field::kReclaimedOps: get_u64(v, L.reclaimed_ops); break;
    case Field::kSeq: L.has_seq = get_u64(v, L.seq); break;  // always: hangs reads it (note_for_hangs)
    case Field::kStartWallNs: L.has_start = get_i64(v, L.start_wall_ns); break;
    case Field::kType: L.has_type = get_str(v, L.type); break;
    case Field::kTiming: get_str(v, L.timing); break;
    case Field::kTransport: get_str(v, L.transport); break;
    case Field::kWallNs: set_wall(v); break;
    case Field::kUncertainty: get_i64(v, L.uncertainty_ns); break;
    case Field::kSamples: get_i64(v, L.samples); break;
    case Field::kIssue: get_i64(v, L.issue); break;
    case Field::kIssueOff: L.has_issue_off = get_i64(v, L.issue_off); break;
    case Field::kIssued: get_u64(v, L.issued); break;
    case Field::kStarted: started(v); break;
    case Field::kP2pStarted: get_u64(v, L.p2p_started); break;
    case Field::kInFlight: get_u64(v, L.in_flight); break;
    case Field::kStuck: stuck(v); break;
    case Field::kRoot: get_i64(v, L.root); break;
    case Field::kEnqueueWallNs: get_i64(v, L.enqueue_wall_ns); break;
    case Field::kConfig: config(v); break;
    case Field::kLastFunc: get_str(v, L.last_func); break;
    case Field::kQuietMs: get_i64(v, L.quiet_ms); break;
    case Field::kApiIssued: get_u64(v, L.api_issued); break;
    case Field::kLastApiFunc: get_str(v, L.last_api_func); break;
  }
}

// parse_hash, with the plugin's "0x" + 16 hex digits form cached (a job has few
// communicators): one 16-byte compare instead of a parse. The string lies in a
// padded line buffer; the compare reads only the string's own bytes.
bool RecordReader::comm_hash_of(const FastVal&, std::string_view s, std::uint64_t& out) {
#if defined(__SSE2__)
  if (s.size() == 18 && s[0] == '0' && s[1] == 'x') {
    HashSlot& h = hash_cache_[(static_cast<unsigned char>(s[17]) ^ static_cast<unsigned char>(s[16])) & 7];
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + 2));
    const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(h.hex));
    if (h.valid && _mm_movemask_epi8(_mm_cmpeq_epi8(a, b)) == 0xffff) {
      out = h.val;
      return true;
    }
    if (!parse_hash(s, out)) return false;
    std::memcpy(h.hex, s.data() + 2, 16);
    h.val = out;
    h.valid = true;
    return true;
  }
#endif
  return parse_hash(s, out);
}

// The fast path keeps wall_ns's token and converts it only for the records that use it.
void RecordReader::set_wall(const FastVal& v) {
  if (v.kind != 'n') {  // get_i64 would fail and leave wall_ns as it is
    L_.has_wall = false;
    return;
  }
  if (L_.wall_pending) resolve_wall();  // a repeated key: the earlier value first, as in order
  L_.wall_raw = v.raw;
  L_.wall_pending = true;
}

// ---- nested fields

// A counter object {"reason": n, ...} (stats: dropped, filtered, faults).
template <class V>
void RecordReader::counts(const V& vin, Counts& out) {
  dom::element v;
  if (!nested_.parse(vin, v)) return;
  dom::object o;
  if (v.get_object().get(o)) return;
  for (dom::key_value_pair f : o) {
    std::uint64_t n = 0;
    if (get_u64(f.value, n)) out.emplace_back(std::string(f.key), n);
  }
}

// meta.job: the job id and the process's rank in the job.
template <class V>
void RecordReader::job(const V& vin) {
  dom::element je;
  dom::object o;
  if (!nested_.parse(vin, je) || je.get_object().get(o)) return;
  Line& L = L_;
  for (dom::key_value_pair f : o) {
    if (f.key == sc::kJobId && get_str(f.value, L.job_id)) {
      job_id_own_ = std::string(L.job_id);  // outlives the nested parser's buffer
      L.job_id = job_id_own_;
    }
    std::string_view gr;
    if (f.key == sc::kJobGlobalRank && get_str(f.value, gr)) {
      std::int64_t g = 0;
      const auto [p, ec] = std::from_chars(gr.data(), gr.data() + gr.size(), g);
      if (ec == std::errc() && p == gr.data() + gr.size() && g >= 0 && g <= INT32_MAX) L.global_rank = g;
    }
  }
}

// progress.started: {"AllReduce": seq, ...}
template <class V>
void RecordReader::started(const V& vin) {
  dom::element v;
  dom::object o;
  if (!nested_.parse(vin, v) || v.get_object().get(o)) return;
  for (dom::key_value_pair f : o) {
    std::uint64_t n = 0;
    if (get_u64(f.value, n) && started_.size() < 16) started_.emplace_back(std::string(f.key), n);
  }
}

// progress.stuck: [{"kind":..., "func":..., "seq":..., ..., "net":[{...}]}, ...]
template <class V>
void RecordReader::stuck(const V& vin) {
  dom::element v;
  dom::array a;
  if (!nested_.parse(vin, v) || v.get_array().get(a)) return;
  auto mask = [](dom::element e) {
    std::uint64_t m = 0;
    dom::array ids;
    if (e.get_array().get(ids)) return m;
    for (dom::element id : ids) {
      std::int64_t c = -1;
      if (get_i64(id, c) && c >= 0 && c < 64) m |= 1ull << c;
    }
    return m;
  };
  for (dom::element e : a) {
    dom::object o;
    if (e.get_object().get(o) || stuck_.size() >= 64) continue;
    StuckOpInfo so;
    bool has_func = false;
    for (dom::key_value_pair f : o) {
      std::string_view sv;
      std::int64_t i = 0;
      if (f.key == sc::kKind && get_str(f.value, sv)) {
        so.kind = sv == sc::kTypeP2p ? OpKind::kP2p : sv == sc::kTypeCe ? OpKind::kCe : OpKind::kColl;
      } else if (f.key == sc::kFunc && get_str(f.value, sv)) {
        so.func = parse_func(sv);
        so.func_name = cut_label(sv);
        has_func = true;
      } else if (f.key == sc::kSeq) {
        get_u64(f.value, so.seq);
      } else if (f.key == sc::kIssue) {
        get_i64(f.value, so.issue);
      } else if ((f.key == sc::kPeer || f.key == sc::kRoot) && get_i64(f.value, i)) {
        so.peer = static_cast<int>(std::clamp<std::int64_t>(i, -1, INT32_MAX));
      } else if (f.key == sc::kBytes) {
        get_u64(f.value, so.bytes);
      } else if (f.key == sc::kDtype && get_str(f.value, sv)) {
        so.dtype = cut_label(sv);
      } else if (f.key == sc::kEnqueueWallNs) {
        get_i64(f.value, so.enqueue_wall_ns);
      } else if (f.key == sc::kNchannels && get_i64(f.value, i)) {
        so.nchannels = static_cast<int>(std::clamp<std::int64_t>(i, 0, 4096));
      } else if (f.key == sc::kChStarted) {
        so.ch_started = mask(f.value);
      } else if (f.key == sc::kChDone) {
        so.ch_done = mask(f.value);
      } else if (f.key == sc::kNet) {
        dom::array na;
        if (f.value.get_array().get(na)) continue;
        for (dom::element ne : na) {
          dom::object no;
          if (ne.get_object().get(no) || so.net.size() >= 64) continue;
          StuckNet n;
          for (dom::key_value_pair g : no) {
            std::uint64_t u = 0;
            if (g.key == sc::kPeer && get_i64(g.value, i)) n.peer = static_cast<int>(std::clamp<std::int64_t>(i, -1, INT32_MAX));
            else if (g.key == sc::kDir && get_str(g.value, sv)) n.send = sv == "send";
            else if (g.key == sc::kNetOps && get_u64(g.value, u)) n.proxy_ops = static_cast<std::uint32_t>(std::min<std::uint64_t>(u, UINT32_MAX));
            else if (g.key == sc::kPosted && get_u64(g.value, u)) n.posted = static_cast<std::uint32_t>(std::min<std::uint64_t>(u, UINT32_MAX));
            else if (g.key == sc::kDone && get_u64(g.value, u)) n.done = static_cast<std::uint32_t>(std::min<std::uint64_t>(u, UINT32_MAX));
          }
          so.net.push_back(n);
        }
      }
    }
    if (has_func) stuck_.push_back(std::move(so));
  }
}

// meta.config: the one setting the analyzer reads, NCCL_INSPECTOR_HANG_MS.
template <class V>
void RecordReader::config(const V& vin) {
  dom::element v;
  dom::object o;
  if (!nested_.parse(vin, v) || v.get_object().get(o)) return;
  std::int64_t ms = -1;
  dom::element e;
  if (!o["NCCL_INSPECTOR_HANG_MS"].get(e) && get_i64(e, ms)) L_.hang_ms = ms;
}

// hcas: [{"dev": name or number, "bytes": n, ...}, ...]
template <class V>
void RecordReader::hcas(const V& vin) {
  dom::element v;
  if (!nested_.parse(vin, v)) return;
  dom::array a;
  if (v.get_array().get(a)) return;
  for (auto e : a) {
    dom::object o;
    if (e.get_object().get(o)) continue;
    HcaUse h;
    for (dom::key_value_pair f : o) {
      const std::string_view k = f.key;
      if (k == sc::kHcaDev) {
        std::string_view s;
        std::int64_t i;
        dom::element fv = f.value;
        if (!fv.get_string().get(s)) h.dev = std::string(s);
        else if (get_i64(fv, i)) h.dev = std::to_string(i);
      } else if (k == sc::kBytes) {
        get_u64(f.value, h.bytes);
      } else if (k == sc::kHcaWireUs) {
        double w;
        if (!f.value.get_double().get(w) && w > 0 && std::isfinite(w)) h.wire_us = w;
      }
    }
    detail_.hcas.push_back(std::move(h));
  }
}

// ch_times: [[channel, start_offset_us, dur_us], ...]
template <class V>
void RecordReader::ch_times(const V& vin) {
  dom::element v;
  if (!nested_.parse(vin, v)) return;
  dom::array a;
  if (v.get_array().get(a)) return;
  for (auto e : a) {
    dom::array t;
    if (e.get_array().get(t)) continue;
    double vals[3] = {0, 0, 0};
    int i = 0;
    for (auto x : t) {
      double d;
      if (i < 3 && !x.get_double().get(d)) vals[i] = d;
      ++i;
    }
    if (i >= 3) detail_.ch_times.push_back({static_cast<int>(vals[0]), vals[1], vals[2]});
  }
}

// ch_slow: [channel, its us, median channel us].
template <class V>
void RecordReader::ch_slow(const V& vin) {
  dom::element v;
  if (!nested_.parse(vin, v)) return;
  dom::array a;
  if (v.get_array().get(a)) return;
  double vals[3] = {-1, 0, 0};
  int i = 0;
  for (auto x : a) {
    double d;
    if (i < 3 && !x.get_double().get(d)) vals[i] = d;
    ++i;
  }
  if (i != 3 || !(vals[0] >= 0 && vals[0] < 64) || !(vals[1] >= 0) || !(vals[2] >= 0)) return;
  detail_.slow_ch = static_cast<int>(vals[0]);
  detail_.slow_us = vals[1];
  detail_.median_us = vals[2];
}

// phases: per phase [min, median, max, channels] (us). Always read for
// initial_sync's median (stragglers); the rest into the detail when asked.
template <class V>
void RecordReader::phases(const V& vin) {
  dom::element v;
  if (!nested_.parse(vin, v)) return;
  dom::object o;
  if (v.get_object().get(o)) return;
  static constexpr std::string_view kName[3] = {sc::kPhaseInitialSync, sc::kPhaseCompute, sc::kPhaseFinalSync};
  for (dom::key_value_pair f : o) {
    int p = 0;
    while (p < 3 && f.key != kName[p]) ++p;
    if (p == 3) continue;
    dom::array a;
    if (f.value.get_array().get(a)) continue;
    double vals[3] = {kNaN, kNaN, kNaN};
    int i = 0;
    for (auto x : a) {
      double d;
      if (i < 3 && !x.get_double().get(d) && d >= 0 && std::isfinite(d)) vals[i] = d;
      ++i;
    }
    if (i != 4 || !(vals[0] <= vals[1] && vals[1] <= vals[2])) continue;  // not [min, median, max, n]: ignored
    if (p == 0) L_.sync_us = static_cast<float>(vals[1]);
    if (want_detail_) detail_.phases[static_cast<std::size_t>(p)] = {vals[0], vals[1], vals[2]};
  }
}

// net: the network totals of an op.
template <class V>
void RecordReader::net(const V& vin) {
  dom::element v;
  if (!nested_.parse(vin, v)) return;
  dom::object o;
  if (v.get_object().get(o)) return;
  for (dom::key_value_pair f : o) {
    if (f.key == sc::kNetWaitUs) get_f64(f.value, detail_.net_wait_us);
    else if (f.key == sc::kNetSendBytes) get_u64(f.value, detail_.net_send_bytes);
    else if (f.key == sc::kNetRecvBytes) get_u64(f.value, detail_.net_recv_bytes);
  }
}

template <class V>
void RecordReader::upstream(const V& vin, void (*section)(dom::element, Line&)) {
  dom::element v;
  if (nested_.parse(vin, v)) section(v, L_);
}
template <class V>
void RecordReader::upstream_op(const V& vin, bool p2p) {
  dom::element v;
  if (nested_.parse(vin, v)) upstream_perf(v, p2p, L_);
}

// ---- records

void RecordReader::dispatch() {
  const Line& L = L_;
  if (!L.has_type) {
    ++info_->bad_lines;
    problem("no \"" + std::string(sc::kType) + "\" field");
    return;
  }
  const std::string_view t = L.type;
  const RecType rt = padded_ ? type_cache_.get(t, rec_type) : rec_type(t);
  if (rt != RecType::kOther) {
    on_op(rt);
    return;
  }
  if (L.wall_pending) resolve_wall();
  // A meta record that starts the next log of a concatenation: its time is that log's.
  if (t == sc::kTypeMeta && info_->lines > 1 && (info_->meta_first || info_->ops > 0)) next_file();
  if (L.has_wall && L.wall_ns > info_->last_wall_ns) info_->last_wall_ns = L.wall_ns;
  if (t == sc::kTypeMeta) {
    on_meta();
  } else if (t == sc::kTypeComm) {
    on_comm();
  } else if (t == sc::kTypeStats) {
    on_stats();
  } else if (t == sc::kTypeMark) {
    info_->marks.push_back({L.wall_ns, cut_label(L.label)});
  } else if (t == sc::kTypeTag) {
    if (L.user_tag == 0 || L.label.empty()) {
      ++info_->bad_lines;
      problem(std::string(sc::kTypeTag) + " record without a " + std::string(sc::kUserTag) + " or a " +
              std::string(sc::kLabel));
    } else if (info_->tag_names.size() < 65536) {
      info_->tag_names.push_back({L.wall_ns, cut_label(L.label), L.user_tag});
    }
  } else if (t == sc::kTypeEnd) {
    info_->has_end = true;
    info_->dropped_total_end = L.dropped_total;
  } else if (t == sc::kTypeProgress) {
    on_progress();
  } else if (t == sc::kTypeCommEnd) {
    on_comm_end();
  } else if (t == sc::kTypeAlive) {
    // its wall_ns (above) is all it says
  } else if (t == sc::kTypeClock) {
    if (L.has_hash && info_->clocks.size() < 4096)
      info_->clocks.push_back({L.comm_hash, L.wall_ns, L.uncertainty_ns, L.samples});
  } else {
    on_other(t);
  }
}

// A meta record after the first line of a log that had its own meta record
// (or ops) starts another log: logs concatenated into one stream (`cat
// logs/*.gz | nccl-inspector summary -`, gzip members and plain text alike)
// are read as the files they were, each with its own host, pid and ops.
// Per-file state starts afresh; the stream's byte counts stay with its first
// file, its end (truncation) goes to the last. (A meta record after a few
// bad lines and nothing else stays in its file: validate reports it.)
bool RecordReader::next_file() {
  if (next_ == nullptr || !*next_) return false;
  std::uint32_t idx = 0;
  FileInfo* f = (*next_)(path_ + " (log " + std::to_string(++logs_ + 1) + ")", idx);
  if (f == nullptr) return false;
  close_groups();
  --info_->lines;  // this line is the next file's first
  f->gzip = info_->gzip;
  info_ = f;
  idx_ = idx;
  info_->lines = 1;
  progress_cache_.fill(~0u);
  comm_cache_.fill(~0u);
  return true;
}

void RecordReader::on_meta() {
  const Line& L = L_;
  if (info_->lines == 1) info_->meta_first = true;
  else problem(std::string(sc::kTypeMeta) + " record not on the first line");
  info_->format = FileFormat::kOurs;
  info_->format_string = std::string(L.format);
  info_->format_version = L.format_version;
  info_->plugin_version = std::string(L.plugin_version);
  info_->hang_ms = L.hang_ms;
  info_->host = std::string(L.host);
  info_->pid = L.pid;
  info_->file_seq = L.file_seq;
  info_->instance = std::string(L.instance);
  info_->abi_version = static_cast<int>(L.abi);
  info_->job_id = std::string(L.job_id);
  info_->global_rank = static_cast<int>(L.global_rank);
  if (!validate_) return;
  const std::string meta(sc::kTypeMeta);
  if (L.format != sc::kFormatName)
    problem(meta + "." + std::string(sc::kFormat) + " is not \"" + std::string(sc::kFormatName) + "\"");
  if (L.format_version < 1 || L.format_version > sc::kFormatVersion)
    problem("unsupported " + std::string(sc::kFormatVersionField) + " " + std::to_string(L.format_version));
  if (L.host.empty()) problem(meta + " without " + std::string(sc::kHost));
}

void RecordReader::on_comm() {
  const Line& L = L_;
  if (!L.has_hash) {
    problem(without(sc::kTypeComm, sc::kCommHash));
    return;
  }
  CommInfo c{L.comm_hash, cut_label(L.comm_name), static_cast<int>(L.rank), static_cast<int>(L.nranks),
             static_cast<int>(L.nnodes), L.cuda_dev >= 0 && L.cuda_dev < 1 << 20 ? static_cast<int>(L.cuda_dev) : -1,
             std::string(L.pci_bus_id)};
  info_->comms.push_back(std::move(c));
}

// The file keeps its last (cumulative) stats record.
void RecordReader::on_stats() {
  const Line& L = L_;
  StatsInfo& s = info_->stats;
  if (s.present && L.wall_ns < s.wall_ns) return;
  s.present = true;
  s.wall_ns = L.wall_ns;
  s.records_written = L.records_written;
  s.ops_completed = L.ops_completed;
  s.records_pending = L.records_pending;
  s.reclaimed_ops = L.reclaimed_ops;
  s.dropped.clear();
  s.filtered.clear();
  s.faults.clear();
  for (auto& [k, n] : dropped_) s.dropped[k] = n;
  for (auto& [k, n] : filtered_) s.filtered[k] = n;
  for (auto& [k, n] : faults_) s.faults[k] = n;
}

// The file's entry for (comm, rank): a direct-mapped cache of positions in
// info_->progress in front of a search (a process has few comms; ops of
// several interleave).
CommRankProgress& RecordReader::progress_of(std::uint64_t hash, std::int64_t rank) {
  auto& v = info_->progress;
  const int r = static_cast<int>(std::clamp<std::int64_t>(rank, -1, INT32_MAX));
  std::uint32_t& slot = progress_cache_[(hash ^ (hash >> 31) ^ static_cast<std::uint64_t>(r)) & (kCommCache - 1)];
  if (slot < v.size() && v[slot].comm_hash == hash && v[slot].rank == r) return v[slot];
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].comm_hash == hash && v[i].rank == r) {
      slot = static_cast<std::uint32_t>(i);
      return v[i];
    }
  CommRankProgress p;
  p.comm_hash = hash;
  p.rank = r;
  v.push_back(std::move(p));
  slot = static_cast<std::uint32_t>(v.size() - 1);
  return v.back();
}

void RecordReader::on_progress() {
  const Line& L = L_;
  if (!L.has_hash) {
    ++info_->bad_lines;
    problem(without(sc::kTypeProgress, sc::kCommHash));
    return;
  }
  CommRankProgress& p = progress_of(L.comm_hash, L.rank);
  if (L.nranks > 0) p.nranks = static_cast<int>(std::min<std::int64_t>(L.nranks, INT32_MAX));
  if (p.has_progress && L.wall_ns < p.progress_wall_ns) return;  // an older line (files out of order)
  p.has_progress = true;
  p.progress_wall_ns = L.wall_ns;
  p.issued = L.issued;
  p.started = started_;
  p.p2p_started = L.p2p_started;
  p.last_func = cut_label(L.last_func);
  p.quiet_ms = L.quiet_ms;
  p.api_issued = L.api_issued;
  p.last_api_func = cut_label(L.last_api_func);
  p.in_flight = static_cast<std::uint32_t>(std::min<std::uint64_t>(L.in_flight, UINT32_MAX));
  p.stuck = stuck_;
  for (const StuckOpInfo& o : stuck_) {
    auto same = [&](const StuckOpInfo& x) {
      return x.kind == o.kind && x.issue == o.issue && x.func == o.func && x.seq == o.seq && x.peer == o.peer;
    };
    if (auto it = std::find_if(p.seen_stuck.begin(), p.seen_stuck.end(), same); it != p.seen_stuck.end()) p.seen_stuck.erase(it);
    if (p.seen_stuck.size() >= 32) p.seen_stuck.erase(p.seen_stuck.begin());
    p.seen_stuck.push_back(o);
  }
}

void RecordReader::on_comm_end() {
  const Line& L = L_;
  if (!L.has_hash) return;
  progress_of(L.comm_hash, L.rank).finalized = true;
}

// A little of every op record, for hangs: the highest issue completed, the
// last collectives (desyncs), ops the timeout reclaimed.
void RecordReader::note_for_hangs(RecType rt) {
  const Line& L = L_;
  if (!L.has_hash || L.upstream) return;
  const std::int64_t t = L.has_start ? L.start_wall_ns : L.enqueue_wall_ns;
  if (t > info_->last_wall_ns) info_->last_wall_ns = t;
  const std::int64_t rank = L.rank >= 0 ? L.rank : -1;
  CommRankProgress& p = progress_of(L.comm_hash, rank);
  if (L.nranks > 0) p.nranks = static_cast<int>(std::min<std::int64_t>(L.nranks, INT32_MAX));
  if (p.first_wall_ns == 0 || (t != 0 && t < p.first_wall_ns)) p.first_wall_ns = t;
  const Func f = cached(func_cache_, L.func, parse_func);
  // A collective's issue: written as issue_off (issue - seq) by the plugin.
  const std::int64_t issue = rt != RecType::kOpColl ? -1
                             : L.issue >= 0         ? L.issue
                             : L.has_issue_off && L.has_seq ? static_cast<std::int64_t>(L.seq) + L.issue_off
                                                            : -1;
  if (L.reclaimed) {
    StuckOpInfo so;
    so.kind = rt == RecType::kOpColl ? OpKind::kColl : rt == RecType::kOpP2p ? OpKind::kP2p : OpKind::kCe;
    so.func = f;
    so.func_name = cut_label(L.func);
    so.seq = L.seq;
    so.issue = issue;
    so.peer = static_cast<int>(std::clamp<std::int64_t>(rt == RecType::kOpP2p ? L.peer : L.root, -1, INT32_MAX));
    so.bytes = L.bytes;
    so.enqueue_wall_ns = L.enqueue_wall_ns;
    so.reclaimed = true;
    if (p.reclaimed.size() >= 16) p.reclaimed.erase(p.reclaimed.begin());
    p.reclaimed.push_back(std::move(so));
    return;
  }
  if (rt == RecType::kOpP2p) p.p2p_done_wall_ns = std::max(p.p2p_done_wall_ns, t);
  if (issue < 0) return;
  if (issue > p.done_issue) {
    p.done_issue = issue;
    p.done_wall_ns = t;
  }
  p.recent[p.done_colls % CommRankProgress::kRecent] =
      CollSig{issue, f, L.seq, L.bytes, static_cast<int>(std::clamp<std::int64_t>(L.root, -1, INT32_MAX))};
  ++p.done_colls;
}

void RecordReader::on_other(std::string_view t) {
  ++info_->unknown_records;
  if (info_->unknown_types.size() < 64) ++info_->unknown_types[std::string(t)];
}

// The first comm record with hash h. A direct-mapped cache of positions in
// info_->comms (positions stay valid as comms are appended; a hit is checked).
const CommInfo* RecordReader::find_comm(std::uint64_t h) {
  auto& slot = comm_cache_[(h ^ (h >> 29)) & (kCommCache - 1)];
  if (slot < info_->comms.size() && info_->comms[slot].comm_hash == h) return &info_->comms[slot];
  for (std::size_t i = 0; i < info_->comms.size(); ++i) {
    if (info_->comms[i].comm_hash == h) {
      slot = static_cast<std::uint32_t>(i);
      return &info_->comms[i];
    }
  }
  return nullptr;
}

void RecordReader::on_op(RecType rt) {
  const Line& L = L_;
  if (!L.has_hash || !L.has_func) {
    ++info_->bad_lines;
    problem(without("op", !L.has_hash ? sc::kCommHash : sc::kFunc));
    return;
  }
  note_for_hangs(rt);
  if (std::isnan(L.dur_us)) {
    // Legal (the schema omits dur_us when an op had no usable time, timing
    // "none"): counted and reported, left out of the analyses.
    ++info_->no_duration;
    return;
  }
  if (L.upstream && info_->format == FileFormat::kUnknown) upstream_file_info(L, *info_);
  Op op;
  fill_op(rt, op);
  if (validate_) validate_op(op);
  ++info_->ops;
  if (want_tag_) detail_.user_tag = L.user_tag;
  sink_.on_op(op, want_tag_ ? &detail_ : nullptr, *info_);
  if (want_detail_) detail_.clear();
  if (want_assembled_ && rt == RecType::kOpP2p && L.group > 0) add_to_group(op, L.group, L.user_tag);
}

void RecordReader::add_to_group(const Op& op, std::int64_t group, std::uint64_t user_tag) {
  const GroupKey key{op.comm_hash, op.rank};
  auto [it, added] = p2p_groups_[key].try_emplace(group);
  P2pGroup& g = it->second;
  if (added) {
    g.nranks = op.nranks;
    g.nnodes = op.nnodes;
    g.user_tag = user_tag;
    ++open_groups_;
  }
  // Bounded: an AlltoAll has 2 n parts; a group with more is no such op.
  const std::size_t full = 2 * static_cast<std::size_t>(std::max(op.nranks, 1));
  // A CPU-timed part (2.23-2.25: no GPU timer; 2.26+: every AlltoAll has a
  // part to the rank itself, which puts NCCL's stamps out of step) still
  // says who sent what: the call is counted with its bytes, no time. So does
  // a GPU-timed part written before its communicator had a clock estimate
  // (no start_wall_ns, docs/log-format.md): its span cannot be placed
  // beside the other parts'.
  const bool gpu = op.timing == Timing::kGpu && op.dur_us >= 0;
  const bool usable = op.nranks == g.nranks && op.peer >= 0 && op.peer < op.nranks && (gpu || cpu_timed(op.timing)) &&
                      (op.flags & (kFlagReclaimed | kFlagPartial)) == 0 &&
                      (op.func == Func::kSend || op.func == Func::kRecv);
  if (g.bad || !usable || g.parts.size() >= full) {
    g.bad = true;
    open_parts_ -= g.parts.size();
    std::vector<Part>().swap(g.parts);
  } else {
    Part& p = g.parts.emplace_back();
    ++open_parts_;
    if (!gpu) g.cpu = op.timing;
    g.desync = g.desync || (op.flags & kFlagKernelDesync) != 0;
    g.all_start = g.all_start && op.has_start();
    p.lo = op.start_wall_ns;
    p.hi = op.start_wall_ns + (op.dur_us >= 0 ? static_cast<std::int64_t>(std::llround(op.dur_us * 1000.0)) : 0);
    p.bytes = static_cast<std::int64_t>(op.bytes);
    p.peer = op.peer;
    p.nch = op.nchannels;
    p.send = op.func == Func::kSend;
    p.transport = op.transport;
    if (g.parts.size() == full) {
      // Every part of an AlltoAll: nothing more can join it.
      assemble(key.first, key.second, group, g);
      open_parts_ -= g.parts.size();
      --open_groups_;
      p2p_groups_[key].erase(it);
      return;
    }
  }
  while (open_groups_ > kOpenGroups || open_parts_ > kOpenParts) evict_oldest(key, group);
}

// Assembles and drops the oldest open group of the file (lowest number: the
// launching thread counts them), other than `keep` of `prefer` (being
// filled): it is presumed complete. Groups that never complete (pipeline
// Send/Recv pairs, unusable parts) leave in age order, not the newest
// AlltoAll of another communicator.
void RecordReader::evict_oldest(const GroupKey& prefer, std::int64_t keep) {
  auto from = p2p_groups_.end();
  std::map<std::int64_t, P2pGroup>::iterator oldest;
  for (auto k = p2p_groups_.begin(); k != p2p_groups_.end(); ++k) {
    auto g = k->second.begin();
    if (g != k->second.end() && k->first == prefer && g->first == keep) ++g;
    if (g == k->second.end()) continue;
    if (from == p2p_groups_.end() || g->first < oldest->first) {
      from = k;
      oldest = g;
    }
  }
  if (from == p2p_groups_.end()) {
    // Only the group being filled: over the budget by itself (2 n parts of a
    // comm larger than the budget); stop holding it.
    open_groups_ = open_parts_ = 0;
    p2p_groups_.clear();
    return;
  }
  assemble(from->first.first, from->first.second, oldest->first, oldest->second);
  open_parts_ -= oldest->second.parts.size();
  --open_groups_;
  from->second.erase(oldest);
}

void RecordReader::assemble(std::uint64_t comm_hash, std::int32_t r, std::int64_t group, const P2pGroup& g) {
  if (g.bad || g.parts.size() < 3) return;
  const int n = g.nranks;
  if (n < 2 || r < 0 || r >= n) return;
  // Bytes per peer and direction; -1: none.
  std::vector<std::int64_t>& send = asm_send_;
  std::vector<std::int64_t>& recv = asm_recv_;
  send.assign(static_cast<std::size_t>(n), -1);
  recv.assign(static_cast<std::size_t>(n), -1);
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  std::uint16_t nch = 0;
  std::uint8_t transport = 0;
  for (const Part& p : g.parts) {
    std::int64_t& b = (p.send ? send : recv)[static_cast<std::size_t>(p.peer)];
    if (b != -1) return;  // two parts to one peer in one direction: no such op
    b = p.bytes;
    lo = std::min(lo, p.lo);
    hi = std::max(hi, p.hi);
    nch = std::max(nch, p.nch);
    transport = std::max(transport, p.transport);
  }
  auto all_peers_same = [&](const std::vector<std::int64_t>& v, std::int64_t& each) {
    each = v[0];
    for (std::int64_t b : v)
      if (b < 0 || b != each) return false;
    return true;
  };
  auto only_self = [&](const std::vector<std::int64_t>& v, std::int64_t each) {
    for (int p = 0; p < n; ++p)
      if ((p == r) != (v[static_cast<std::size_t>(p)] >= 0) || (p == r && v[static_cast<std::size_t>(p)] != each))
        return false;
    return true;
  };
  std::int64_t each = 0, each_r = 0;
  Func f = Func::kOther;
  if (all_peers_same(send, each) && all_peers_same(recv, each_r) && each == each_r)
    f = Func::kAllToAll;
  else if (all_peers_same(recv, each) && only_self(send, each))
    f = Func::kGather;
  else if (all_peers_same(send, each) && only_self(recv, each))
    f = Func::kScatter;
  // Every part GPU-timed and placed on the wall clock: the call's span is the parts' span.
  const bool timed = g.cpu == Timing::kGpu && g.all_start;
  if (f == Func::kOther || each <= 0 || (timed && hi <= lo)) return;
  Op a;
  a.comm_hash = comm_hash;
  a.kind = OpKind::kColl;
  a.func = f;
  a.bytes = static_cast<std::uint64_t>(each) * static_cast<std::uint64_t>(n);
  a.seq = static_cast<std::uint64_t>(group);  // the launch order, whatever order the parts were written in
  if (timed) {
    a.start_wall_ns = lo;
    a.dur_us = static_cast<double>(hi - lo) / 1000.0;
    // nccl-tests: algbw = bytes / time; busbw = algbw (n - 1) / n for all three.
    a.busbw_gbs = static_cast<double>(a.bytes) / static_cast<double>(hi - lo) * (n - 1) / n;
  } else {
    // The parts' CPU times (their enqueue, a proxy's network steps) are not
    // the call's, and GPU times without a start cannot be compared: counted
    // with its bytes, no latency and no bandwidth.
    a.start_wall_ns = g.all_start ? lo : 0;
    a.dur_us = kNaN;
    a.busbw_gbs = kNaN;
  }
  a.rank = r;
  a.nranks = n;
  a.nnodes = g.nnodes;
  a.peer = f == Func::kAllToAll ? -1 : r;
  a.file_idx = idx_;
  a.nchannels = nch;
  a.timing = g.cpu;
  a.transport = transport;
  a.flags = kFlagAssembled;
  if (timed || g.all_start) a.flags |= kFlagHasStart;
  if (g.desync) a.flags |= kFlagKernelDesync;
  if (want_tag_) {
    OpDetail d;
    d.user_tag = g.user_tag;
    sink_.on_op(a, &d, *info_);
  } else {
    sink_.on_op(a, nullptr, *info_);
  }
}

// The Op of the current line; rank and sizes the line lacks come from its
// comm record, and a comm seen only on ops (upstream) is added from the op.
void RecordReader::fill_op(RecType rt, Op& op) {
  const Line& L = L_;
  op.comm_hash = L.comm_hash;
  op.kind = rt == RecType::kOpColl ? OpKind::kColl : rt == RecType::kOpP2p ? OpKind::kP2p : OpKind::kCe;
  op.func = cached(func_cache_, L.func, parse_func);
  op.algo = cached(algo_cache_, L.algo, parse_algo);
  if (L.sym) [[unlikely]] {
    op.algo = sym_algo_of(L.kernel_variant);
    op.sym_plan = static_cast<std::uint8_t>(std::min<std::uint64_t>(L.sym_plan_tasks, 255));
  }
  op.proto = cached(proto_cache_, L.proto, parse_proto);
  op.timing = cached(timing_cache_, L.timing, timing_of);
  op.bytes = L.bytes;
  op.seq = (fields_ & kOpFieldSeq) != 0 ? L.seq : 0;  // read for hangs either way (note_for_hangs)
  op.dur_us = L.dur_us;
  op.busbw_gbs = cpu_timed(op.timing) ? kNaN : L.busbw;  // older plugins wrote one (model.h: cpu_timed)
  op.ch_balance = static_cast<float>(L.ch_balance);
  op.sync_us = L.sync_us;
  op.rank = static_cast<std::int32_t>(L.rank);
  op.nranks = static_cast<std::int32_t>(L.nranks);
  op.nnodes = static_cast<std::uint16_t>(std::clamp<std::int64_t>(L.nnodes, 0, 65535));
  op.peer = static_cast<std::int32_t>(L.peer);
  op.file_idx = idx_;
  const std::int64_t nch = L.channels_len >= 0 ? L.channels_len : L.nchannels;
  op.nchannels = static_cast<std::uint16_t>(std::clamp<std::int64_t>(nch, 0, 65535));
  if (op.rank < 0 || op.nranks == 0 || op.nnodes == 0) {
    if (const CommInfo* c = find_comm(op.comm_hash)) {
      if (op.rank < 0) op.rank = c->rank;
      if (op.nranks == 0) op.nranks = c->nranks;
      if (op.nnodes == 0) op.nnodes = static_cast<std::uint16_t>(std::clamp(c->nnodes, 0, 65535));
    }
  }
  if (L.has_comm_name && !L.comm_name.empty() && !find_comm(op.comm_hash)) {
    info_->comms.push_back({op.comm_hash, cut_label(L.comm_name), op.rank, op.nranks, op.nnodes, -1, ""});
  }
  op.transport = cached(transport_cache_, L.transport, transport_code);
  if (L.reclaimed) op.flags |= kFlagReclaimed;
  if (L.partial) op.flags |= kFlagPartial;
  if (L.graph) op.flags |= kFlagGraph;
  if (L.api_only) op.flags |= kFlagApiOnly;
  if (L.kernel_desync) op.flags |= kFlagKernelDesync;
  if (L.upstream) op.flags |= kFlagUpstream;
  if (L.has_start && !L.upstream) {
    op.start_wall_ns = L.start_wall_ns;
    op.flags |= kFlagHasStart;
  }
}

void RecordReader::validate_op(const Op& op) {
  const Line& L = L_;
  if (!L.has_seq) problem(without("op", sc::kSeq));
  if (!L.has_bytes) problem(without("op", sc::kBytes));
  if (op.func == Func::kOther) problem("unknown " + std::string(sc::kFunc) + " \"" + std::string(L.func) + "\"");
  if (L.dur_us < 0) problem("negative " + std::string(sc::kDurUs));
  if (op.kind == OpKind::kP2p && op.peer < 0) problem(without(sc::kTypeP2p, sc::kPeer));
}

}  // namespace

void read_file(FileInfo& info, std::uint32_t idx, OpSink& sink, bool validate, Decoder& decoder,
               std::atomic<std::uint64_t>& progress, const NextFile* next) {
  RecordReader r(info, idx, sink, validate, next);
  decoder.read(info, r, progress);
  r.finish();
  FileInfo& last = r.current();
  if (&last != &info) {  // a concatenation: how the stream ended is its last file's
    last.truncated = last.truncated || info.truncated;
    last.corrupt = info.corrupt;
    if (last.error.empty()) last.error = std::move(info.error);
    info.truncated = info.corrupt = false;
    info.error.clear();
  }
}

struct Follower::Impl {
  Impl(FileInfo& i, std::uint32_t idx, OpSink& sink) : info(i), reader(i, idx, sink, false) {}
  ~Impl() {
    if (z_ready) inflateEnd(&zs);
  }
  std::uint64_t size_seen = 0;  // the file's size at the last poll
  void stop(std::string why) {
    stopped = true;
    if (info.error.empty()) info.error = std::move(why);
  }
  // Hands inflated or plain text to the reader, kLinePadding readable after it.
  void feed_gzip(unsigned char* d, std::size_t n, std::vector<char>& out) {
    if (!z_ready) {
      if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return stop("zlib init failed");
      z_ready = true;
    }
    zs.next_in = d;
    zs.avail_in = static_cast<uInt>(n);
    while (!stopped) {
      zs.next_out = reinterpret_cast<Bytef*>(out.data());
      zs.avail_out = static_cast<uInt>(kOut);
      const int rc = inflate(&zs, Z_NO_FLUSH);
      const std::size_t produced = kOut - zs.avail_out;
      if (produced) {
        info.uncompressed_bytes += produced;
        reader.chunk(out.data(), produced);
      }
      if (rc == Z_STREAM_END) {
        inflateReset(&zs);  // the next member, now or in a later poll
        if (zs.avail_in == 0) break;
        continue;
      }
      if (rc == Z_OK && (zs.avail_in > 0 || produced == kOut)) continue;
      if (rc == Z_OK || rc == Z_BUF_ERROR) break;  // all input used: wait for more
      info.corrupt = true;
      stop(std::string("gzip data error: ") + (zs.msg ? zs.msg : "unknown"));
    }
  }

  static constexpr std::size_t kOut = std::size_t{1} << 20;
  FileInfo& info;
  RecordReader reader;
  std::uint64_t offset = 0;
  int kind = 0;  // 0 not known yet, 1 plain text, 2 gzip
  z_stream zs{};  // between polls: only the inflate state (32 KiB window), no buffer
  bool z_ready = false;
  bool stopped = false;
};

Follower::Follower(FileInfo& info, std::uint32_t idx, OpSink& sink)
    : impl_(std::make_unique<Impl>(info, idx, sink)) {}
Follower::~Follower() = default;
bool Follower::stopped() const { return impl_->stopped; }
std::uint64_t Follower::behind() const {
  return impl_->stopped || impl_->size_seen < impl_->offset ? 0 : impl_->size_seen - impl_->offset;
}

std::size_t Follower::poll(std::size_t max_bytes) {
  Impl& m = *impl_;
  if (m.stopped) return 0;
  // Opened per poll and closed after it, and buffers shared by every Follower
  // of the thread: a thousand followed files hold no descriptor and no buffer.
  const int fd = open_input(m.info.path);
  if (fd < 0) {
    m.stop("cannot open: " + std::string(std::strerror(errno)));
    return 0;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return 0;
  if (static_cast<std::uint64_t>(st.st_size) < m.offset) {
    m.stop("the file shrank while followed (replaced or truncated)");
    return 0;
  }
  m.size_seen = static_cast<std::uint64_t>(st.st_size);
  thread_local std::vector<unsigned char> in(Impl::kOut + kLinePadding);
  thread_local std::vector<char> out(Impl::kOut + kLinePadding);
  std::size_t total = 0;
  while (!m.stopped && total < max_bytes) {
    const std::size_t want = std::min(Impl::kOut, max_bytes - total);
    const ssize_t got = ::pread(fd, in.data(), want, static_cast<off_t>(m.offset));
    if (got <= 0) break;
    const auto n = static_cast<std::size_t>(got);
    if (m.kind == 0) {
      if (m.offset == 0 && n < 2) break;  // not enough to tell gzip from text yet
      m.kind = in[0] == 0x1f && in[1] == 0x8b ? 2 : 1;
      m.info.gzip = m.kind == 2;
    }
    m.offset += n;
    total += n;
    m.info.compressed_bytes += n;
    if (m.kind == 2) {
      m.feed_gzip(in.data(), n, out);
    } else {
      m.info.uncompressed_bytes += n;
      m.reader.chunk(reinterpret_cast<char*>(in.data()), n);
    }
  }
  // The log's end record: nothing more will come (a new process writes a new file).
  if (m.info.has_end) m.stopped = true;
  return total;
}

}  // namespace ni::analysis::reader_detail
