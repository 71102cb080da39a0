// SpillSink and the memory budget (see partition.h).
#include "src/analysis/partition.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ni::analysis {

static_assert(std::is_trivially_copyable_v<Op>, "runs of an op's fields are spilled as their bytes");
static_assert(sizeof(Op) == 88, "docs/analysis.md gives the bytes an op takes in memory");

bool parse_memory_limit(const std::string& s, std::uint64_t& bytes) {
  if (s.empty()) return false;
  std::size_t i = 0;
  std::uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  if (i == 0) return false;
  int shift = 0;
  if (i < s.size()) {
    switch (s[i] | 0x20) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: return false;
    }
    ++i;
    if (i < s.size() && (s[i] | 0x20) == 'b') ++i;  // "512MB"
    if (i != s.size()) return false;
  }
  if (v == 0 || (shift != 0 && v > (UINT64_MAX >> shift))) return false;
  bytes = v << shift;
  return true;
}

namespace {

// A limit file's value; 0 when absent, unreadable or "max" (none).
std::uint64_t limit_in(const std::string& file) {
  std::FILE* f = std::fopen(file.c_str(), "re");
  if (f == nullptr) return 0;
  char buf[64] = {0};
  const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  unsigned long long v = 0;
  if (got && std::sscanf(buf, "%llu", &v) == 1 && v > 0 && v < (1ull << 60)) return v;  // v1 "no limit" is ~2^63
  return 0;
}

// The lowest limit in `file` from dir up to (and with) top, 0 when none: a
// limit set on a parent (a SLURM job's cgroup over its step's) binds too, and
// a path that does not exist here (a container that sees its own cgroup at the
// mount's root) is skipped up to the root.
std::uint64_t lowest_up(std::string dir, const std::string& top, const char* file) {
  std::uint64_t low = 0;
  while (true) {
    if (const std::uint64_t v = limit_in(dir + "/" + file); v != 0 && (low == 0 || v < low)) low = v;
    if (dir.size() <= top.size()) break;
    dir.resize(dir.find_last_of('/'));
  }
  return low;
}

}  // namespace

std::uint64_t cgroup_memory_limit(const std::string& self_cgroup, const std::string& root) {
  std::uint64_t low = 0;
  auto take = [&low](std::uint64_t v) {
    if (v != 0 && (low == 0 || v < low)) low = v;
  };
  std::size_t at = 0;
  while (at < self_cgroup.size()) {
    std::size_t eol = self_cgroup.find('\n', at);
    if (eol == std::string::npos) eol = self_cgroup.size();
    const std::string line = self_cgroup.substr(at, eol - at);
    at = eol + 1;
    // "ID:CONTROLLERS:PATH"; cgroup v2 is "0::PATH"
    const std::size_t c1 = line.find(':');
    const std::size_t c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string ctl = "," + line.substr(c1 + 1, c2 - c1 - 1) + ",";
    std::string path = line.substr(c2 + 1);
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path.empty() || path[0] != '/') continue;
    if (path == "/") path.clear();
    if (ctl == ",,") {  // v2, mounted at the root or (hybrid) at root/unified
      take(lowest_up(root + path, root, "memory.max"));
      take(lowest_up(root + "/unified" + path, root + "/unified", "memory.max"));
    } else if (ctl.find(",memory,") != std::string::npos) {
      take(lowest_up(root + "/memory" + path, root + "/memory", "memory.limit_in_bytes"));
    }
  }
  return low;
}

std::uint64_t default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::uint64_t mem = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  std::string self;
  if (std::FILE* f = std::fopen("/proc/self/cgroup", "re")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) self.append(buf, n);
    std::fclose(f);
  }
  if (const std::uint64_t cg = cgroup_memory_limit(self, "/sys/fs/cgroup"); cg != 0 && (mem == 0 || cg < mem)) mem = cg;
  return std::max<std::uint64_t>(mem / 4, 256ull << 20);
}

std::uint64_t estimate_ops(const std::vector<std::string>& files) {
  std::uint64_t n = 0;
  for (const std::string& f : files) {
    const int fd = open_input(f);
    if (fd < 0) continue;
    struct stat st {};
    unsigned char magic[2] = {0, 0};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      const bool gz = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
      n += static_cast<std::uint64_t>(st.st_size) / (gz ? 20 : 150) + 1;
    }
    ::close(fd);
  }
  return n;
}

std::size_t batch_ops(std::uint64_t limit) {
  return static_cast<std::size_t>(std::max<std::uint64_t>(1, limit / kBytesPerOpInMemory));
}

void keep_freed_memory() {
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

SpillSink::File::~File() {
  if (fd >= 0) ::close(fd);
}

std::string_view partition_unit(Partition p) {
  return p == Partition::kProcess ? "processes" : "communicators";
}

std::uint64_t SpillSink::process_key(const FileInfo& f) {
  // FNV-1a over the host, then the pid: the files of one process (rotation) share it.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : f.host) h = (h ^ c) * 0x100000001b3ull;
  return (h ^ static_cast<std::uint64_t>(f.pid)) * 0x100000001b3ull;
}

SpillSink::SpillSink(std::string dir, Partition by, bool detail, bool view)
    : dir_(std::move(dir)), by_(by), detail_(detail || view), view_(view), own_(std::make_shared<File>()) {
  files_.push_back(own_);
  std::string templ = dir_ + "/nccl-inspector-spill-XXXXXX";
  own_->fd = ::mkostemp(templ.data(), O_CLOEXEC);
  if (own_->fd < 0) {
    error_ = "cannot create a spill file in " + dir_ + ": " + std::strerror(errno) +
             " (set TMPDIR to a writable directory, or raise --memory-limit)";
    return;
  }
  ::unlink(templ.c_str());  // gone with the process, whatever happens to it
}

SpillSink::~SpillSink() = default;

namespace {

template <class T>
bool get(const char*& p, const char* end, T& v) {
  if (static_cast<std::size_t>(end - p) < sizeof v) return false;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return true;
}

bool get_varint(const char*& p, const char* end, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const auto c = static_cast<unsigned char>(*p++);
    v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
    if (c < 0x80) return true;
  }
  return false;
}
std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }

// A double the logs give with three decimals (dur_us, busbw_gbs) is k / 1000
// for an integer k, exactly (both are the double nearest the decimal): true
// and k when that gives back its very bits.
bool as_millis(double v, std::int64_t& k) {
  if (!(std::fabs(v) < 1e12)) return false;  // NaN, infinities, and what would not fit
  // Rounded inline (llround is a libm call, four per op): any k will do, the
  // check below keeps only one that gives back v exactly.
  const double x = v * 1000.0;
  k = static_cast<std::int64_t>(x + (x >= 0 ? 0.5 : -0.5));
  return std::bit_cast<std::uint64_t>(static_cast<double>(k) / 1000.0) == std::bit_cast<std::uint64_t>(v);
}

// What an op's encoding leaves out or shortens (SpillSink::encode).
enum : std::uint16_t {
  kSameComm = 1,       // comm_hash as the op it is written against
  kSameIds = 2,        // rank, nranks, peer, file_idx, nchannels, nnodes
  kSameKind = 4,       // kind, func, algo, proto, timing, flags, transport, sym_plan
  kSameBytes = 8,
  kDurMillis = 16,     // dur_us as a zigzag varint of thousandths
  kBusbwMillis = 32,   // busbw_gbs likewise
  kSameBalance = 64,   // ch_balance's bits as the op written against
  kSameSync = 128,     // sync_us's bits likewise
  kNoExtra = 256,      // with detail: the Extra of no detail (no HCA, no slowest channel)
  kNoView = 512,       // with view detail: no channel times, network bytes or tag
  kSlotShift = 13,     // bits 13..15: the slot of the op it is written against (Buf::prev)
};
// The two runs of small fields compared and copied whole.
constexpr std::size_t kIdsAt = offsetof(Op, rank), kIdsLen = offsetof(Op, kind) - offsetof(Op, rank);
constexpr std::size_t kKindAt = offsetof(Op, kind), kKindLen = offsetof(Op, sym_plan) + 1 - offsetof(Op, kind);
static_assert(kIdsLen == 20 && kKindLen == 8, "Op's identity and kind fields lie together (model.h)");

bool same_bytes(const void* a, const void* b, std::size_t n) { return std::memcmp(a, b, n) == 0; }
const char* at(const Op& op, std::size_t off) { return reinterpret_cast<const char*>(&op) + off; }
char* at(Op& op, std::size_t off) { return reinterpret_cast<char*>(&op) + off; }

bool no_extra(const CollectSink::Extra& e) {
  return e.hcas.empty() && e.slowest_channel == -1 && std::bit_cast<std::uint64_t>(e.slowest_ratio) == 0 &&
         std::bit_cast<std::uint32_t>(e.slowest_us) == 0 && std::bit_cast<std::uint32_t>(e.median_us) == 0;
}

}  // namespace

std::uint16_t SpillSink::dev_id(const std::string& dev) {
  auto it = dev_ids_.find(dev);
  if (it != dev_ids_.end()) return it->second;
  if (own_->devs.size() >= 0xffff) return 0xffff;  // more HCA names than any machine has: "?"
  const auto id = static_cast<std::uint16_t>(own_->devs.size());
  own_->devs.push_back(dev);
  dev_ids_.emplace(dev, id);
  return id;
}

void SpillSink::on_op(const Op& op, const OpDetail* d, const FileInfo& file) {
  int b;
  if (by_ == Partition::kProcess) {
    if (op.file_idx != last_file_) {
      last_file_ = op.file_idx;
      // A file without a pid (upstream logs) is a process of its own, as map_gpus() takes it.
      last_bucket_ = bucket_of(file.pid >= 0 ? process_key(file) : ~std::uint64_t{op.file_idx});
    }
    b = last_bucket_;
  } else {
    b = bucket_of(op.comm_hash);
  }
  Buf& buf = buf_[static_cast<std::size_t>(b)];
  if (buf.bytes.capacity() == 0) buf.bytes.reserve(kChunkBytes + 256);
  encode(buf, op, d);
  ++buf.count;
  ++count_[static_cast<std::size_t>(b)];
  ++ops_;
  if (buf.bytes.size() >= kChunkBytes) flush(b);
}

void SpillSink::flush(int b) {
  Buf& buf = buf_[static_cast<std::size_t>(b)];
  if (buf.count == 0) return;
  if (error_.empty()) {
    const char* p = buf.bytes.data();
    std::size_t left = buf.bytes.size();
    std::uint64_t at = own_->size;
    while (left > 0) {
      const ssize_t w = ::pwrite(own_->fd, p, left, static_cast<off_t>(at));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = std::string("cannot write the spill file in ") + dir_ + ": " +
                 (w < 0 ? std::strerror(errno) : "no space written") +
                 " (set TMPDIR to a directory with room, or raise --memory-limit)";
        break;
      }
      p += w;
      at += static_cast<std::uint64_t>(w);
      left -= static_cast<std::size_t>(w);
    }
    if (error_.empty()) {
      own_->chunks.push_back({own_->size, static_cast<std::uint32_t>(buf.bytes.size()), buf.count,
                              static_cast<std::uint16_t>(b)});
      own_->size = at;
    }
  }
  buf.bytes.clear();
  buf.count = 0;
  for (Op& p : buf.prev) p = Op{};  // the next chunk is read on its own
  buf.victim = 0;
}

namespace {

// Writes an op's encoding into a buffer that has room for it (the largest
// fixed part is under 128 bytes; HCAs are written one at a time).
struct Writer {
  char* p;
  template <class T>
  void put(const T& v) {
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
  }
  void raw(const char* s, std::size_t n) {
    std::memcpy(p, s, n);
    p += n;
  }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
  }
};

}  // namespace

void SpillSink::encode(Buf& buf, const Op& op, const OpDetail* d) {
  static_assert(kSlots == 8, "three bits of slot in `how`");
  unsigned slot = 0;
  while (slot < kSlots && buf.prev[slot].comm_hash != op.comm_hash) ++slot;
  if (slot == kSlots) {  // the least recently taken slot
    slot = buf.victim;
    buf.victim = (buf.victim + 1) % kSlots;
  }
  const Op& pv = buf.prev[slot];
  auto how = static_cast<std::uint16_t>(slot << kSlotShift);
  std::int64_t dur_k = 0, bw_k = 0;
  if (op.comm_hash == pv.comm_hash) how |= kSameComm;
  if (same_bytes(at(op, kIdsAt), at(pv, kIdsAt), kIdsLen)) how |= kSameIds;
  if (same_bytes(at(op, kKindAt), at(pv, kKindAt), kKindLen)) how |= kSameKind;
  if (op.bytes == pv.bytes) how |= kSameBytes;
  if (as_millis(op.dur_us, dur_k)) how |= kDurMillis;
  if (as_millis(op.busbw_gbs, bw_k)) how |= kBusbwMillis;
  if (same_bytes(&op.ch_balance, &pv.ch_balance, sizeof op.ch_balance)) how |= kSameBalance;
  if (same_bytes(&op.sync_us, &pv.sync_us, sizeof op.sync_us)) how |= kSameSync;
  // The op's Extra as CollectSink::extra_of makes it, but its HCAs stay in d.
  CollectSink::Extra e;
  static const std::vector<HcaUse> kNoHcas;
  const std::vector<HcaUse>& hcas = d != nullptr ? d->hcas : kNoHcas;
  if (detail_) {
    if (d != nullptr) CollectSink::slowest_of(*d, e);
    if (no_extra(e) && hcas.empty()) how |= kNoExtra;
  }
  const std::uint64_t net = d != nullptr ? d->net_send_bytes + d->net_recv_bytes : 0;
  const std::uint64_t tag = d != nullptr ? d->user_tag : 0;
  if (view_ && (d == nullptr || d->ch_times.empty()) && net == 0 && tag == 0) how |= kNoView;
  char tmp[128];
  Writer w{tmp};
  w.put(how);
  if (!(how & kSameComm)) w.put(op.comm_hash);
  if (!(how & kSameIds)) w.raw(at(op, kIdsAt), kIdsLen);
  if (!(how & kSameKind)) w.raw(at(op, kKindAt), kKindLen);
  if (!(how & kSameBytes)) w.varint(op.bytes);
  w.varint(zigzag(static_cast<std::int64_t>(op.seq - pv.seq)));  // wraps back in the read
  w.varint(zigzag(static_cast<std::int64_t>(static_cast<std::uint64_t>(op.start_wall_ns) -
                                            static_cast<std::uint64_t>(pv.start_wall_ns))));
  if (how & kDurMillis) w.varint(zigzag(dur_k));
  else w.put(op.dur_us);
  if (how & kBusbwMillis) w.varint(zigzag(bw_k));
  else w.put(op.busbw_gbs);
  if (!(how & kSameBalance)) w.put(op.ch_balance);
  if (!(how & kSameSync)) w.put(op.sync_us);
  const std::size_t nh = detail_ && !(how & kNoExtra) ? std::min<std::size_t>(hcas.size(), 0xffff) : 0;
  if (detail_ && !(how & kNoExtra)) {
    w.put(static_cast<std::int32_t>(e.slowest_channel));
    w.put(e.slowest_ratio);
    w.put(e.slowest_us);
    w.put(e.median_us);
    w.varint(nh);
  }
  static_assert(2 + 8 + kIdsLen + kKindLen + 5 * 10 + 2 * 4 + 4 + 8 + 2 * 4 + 3 <= sizeof tmp);
  buf.bytes.append(tmp, static_cast<std::size_t>(w.p - tmp));
  for (std::size_t h = 0; h < nh; ++h) {
    Writer hw{tmp};
    hw.put(dev_id(hcas[h].dev));
    hw.varint(hcas[h].bytes);
    hw.put(hcas[h].wire_us);
    buf.bytes.append(tmp, static_cast<std::size_t>(hw.p - tmp));
  }
  if (view_ && !(how & kNoView)) {
    const std::size_t nch = d != nullptr ? d->ch_times.size() : 0;
    Writer vw{tmp};
    vw.varint(nch);
    vw.varint(net);
    vw.varint(tag);
    buf.bytes.append(tmp, static_cast<std::size_t>(vw.p - tmp));
    for (std::size_t k = 0; k < nch; ++k) {
      const CollectSink::ChSpan c = CollectSink::ChSpan::of(d->ch_times[k]);
      Writer cw{tmp};
      cw.put(c.channel);
      cw.put(c.off_us);
      cw.put(c.dur_us);
      buf.bytes.append(tmp, static_cast<std::size_t>(cw.p - tmp));
    }
  }
  buf.prev[slot] = op;
}

void SpillSink::merge(SpillSink&& o) {
  for (int b = 0; b < kBuckets; ++b) o.flush(b);
  if (error_.empty() && !o.error_.empty()) error_ = o.error_;
  files_.insert(files_.end(), o.files_.begin(), o.files_.end());
  o.files_.clear();
  for (int b = 0; b < kBuckets; ++b) count_[static_cast<std::size_t>(b)] += o.count_[static_cast<std::size_t>(b)];
  ops_ += o.ops_;
}

std::uint64_t SpillSink::spilled_bytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files_) n += f->size;
  return n;
}

bool SpillSink::parse(const File& f, const char* p, const char* end, std::uint32_t count, CollectSink& into,
                      bool detail) {
  Op slots[kSlots];  // the ops written against (SpillSink::encode): every field they repeat
  CollectSink::Extra skipped;
  CollectSink::ViewCols skipped_view;
  for (std::uint32_t k = 0; k < count; ++k) {
    std::uint16_t how = 0;
    std::uint64_t v = 0;
    if (!get(p, end, how)) return false;
    Op& op = slots[how >> kSlotShift];
    if (!(how & kSameComm) && !get(p, end, op.comm_hash)) return false;
    for (auto [flag, off, len] : {std::tuple{kSameIds, kIdsAt, kIdsLen}, std::tuple{kSameKind, kKindAt, kKindLen}})
      if (!(how & flag)) {
        if (static_cast<std::size_t>(end - p) < len) return false;
        std::memcpy(at(op, off), p, len);
        p += len;
      }
    if (!(how & kSameBytes) && !get_varint(p, end, op.bytes)) return false;
    if (!get_varint(p, end, v)) return false;
    op.seq += static_cast<std::uint64_t>(unzigzag(v));
    if (!get_varint(p, end, v)) return false;
    op.start_wall_ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(op.start_wall_ns) +
                                                 static_cast<std::uint64_t>(unzigzag(v)));
    if (how & kDurMillis) {
      if (!get_varint(p, end, v)) return false;
      op.dur_us = static_cast<double>(unzigzag(v)) / 1000.0;
    } else if (!get(p, end, op.dur_us)) {
      return false;
    }
    if (how & kBusbwMillis) {
      if (!get_varint(p, end, v)) return false;
      op.busbw_gbs = static_cast<double>(unzigzag(v)) / 1000.0;
    } else if (!get(p, end, op.busbw_gbs)) {
      return false;
    }
    if (!(how & kSameBalance) && !get(p, end, op.ch_balance)) return false;
    if (!(how & kSameSync) && !get(p, end, op.sync_us)) return false;
    into.ops.push_back(op);
    if (!detail_) continue;
    // Without detail wanted, read into a scratch Extra (the bytes are still read through).
    CollectSink::Extra& e = detail ? into.extra.emplace_back() : skipped;
    if (!(how & kNoExtra)) {
      std::int32_t ch = -1;
      if (!get(p, end, ch) || !get(p, end, e.slowest_ratio) || !get(p, end, e.slowest_us) ||
          !get(p, end, e.median_us) || !get_varint(p, end, v) || v > 0xffff)
        return false;
      e.slowest_channel = ch;
      e.hcas.resize(v);
      for (HcaUse& h : e.hcas) {
        std::uint16_t id = 0;
        if (!get(p, end, id) || !get_varint(p, end, h.bytes) || !get(p, end, h.wire_us)) return false;
        if (detail) h.dev = id < f.devs.size() ? f.devs[id] : "?";
      }
    }
    if (!view_) continue;
    CollectSink::ViewCols& vc = detail ? into.view : skipped_view;
    std::uint64_t nch = 0, net = 0, tag = 0;
    if (!(how & kNoView)) {
      if (!get_varint(p, end, nch) || !get_varint(p, end, net) || !get_varint(p, end, tag) ||
          nch > static_cast<std::uint64_t>(end - p) / 10)
        return false;
      for (std::uint64_t c_i = 0; c_i < nch; ++c_i) {
        CollectSink::ChSpan& c = vc.ch.emplace_back();
        if (!get(p, end, c.channel) || !get(p, end, c.off_us) || !get(p, end, c.dur_us)) return false;
      }
    }
    vc.ch_end.push_back(static_cast<std::uint32_t>(vc.ch.size()));
    vc.net_bytes.push_back(net);
    vc.tag.push_back(tag);
    if (!detail) vc.clear();
  }
  return p == end;
}

std::size_t SpillSink::for_each_batch(std::size_t max_ops, const std::function<void(CollectSink&)>& fn, bool detail) {
  for (int b = 0; b < kBuckets; ++b) flush(b);
  if (!error_.empty()) return 0;
  // Per bucket, its chunks in every file (file order, then the file's order).
  std::vector<std::vector<std::pair<const File*, const Chunk*>>> where(kBuckets);
  for (const auto& f : files_)
    for (const Chunk& c : f->chunks) where[c.bucket].push_back({f.get(), &c});
  // The batches first (consecutive buckets up to max_ops), so that each is
  // allocated once at its size.
  std::vector<std::pair<int, int>> plan;  // [first bucket, last bucket)
  std::uint64_t in_batch = 0;
  for (int b = 0; b < kBuckets; ++b) {
    const std::uint64_t n = count_[static_cast<std::size_t>(b)];
    if (n == 0) continue;
    if (plan.empty() || (in_batch != 0 && in_batch + n > max_ops)) {
      plan.push_back({b, b + 1});
      in_batch = 0;
    }
    plan.back().second = b + 1;
    in_batch += n;
  }
  std::size_t batches = 0;
  std::string chunk;
  // One batch's memory, reused: a fresh one per batch would have the kernel
  // zero its pages again each time (a third of the time, measured on batches
  // of millions of ops).
  CollectSink batch(detail_);
  for (const auto& [first, end] : plan) {
    std::uint64_t total = 0;
    for (int b = first; b < end; ++b) total += count_[static_cast<std::size_t>(b)];
    batch.ops.clear();
    batch.extra.clear();
    batch.view.clear();
    if (batch.ops.capacity() < total) {  // the smaller one goes first: never both held
      batch.ops = {};
      batch.extra = {};
      batch.view = {};
    }
    batch.ops.reserve(static_cast<std::size_t>(total));
    if (detail_ && detail) batch.extra.reserve(static_cast<std::size_t>(total));
    if (view_ && detail) {
      batch.view.ch_end.reserve(static_cast<std::size_t>(total));
      batch.view.net_bytes.reserve(static_cast<std::size_t>(total));
      batch.view.tag.reserve(static_cast<std::size_t>(total));
    }
    for (int b = first; b < end; ++b)
      for (const auto& [f, c] : where[static_cast<std::size_t>(b)]) {
        chunk.resize(c->bytes);
        char* p = chunk.data();
        std::size_t left = c->bytes;
        std::uint64_t off = c->offset;
        while (left > 0) {
          const ssize_t r = ::pread(f->fd, p, left, static_cast<off_t>(off));
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) {
            error_ = std::string("cannot read back the spill file: ") + (r < 0 ? std::strerror(errno) : "short read");
            return 0;
          }
          p += r;
          off += static_cast<std::uint64_t>(r);
          left -= static_cast<std::size_t>(r);
        }
        if (!parse(*f, chunk.data(), chunk.data() + chunk.size(), c->count, batch, detail)) {
          error_ = "the spill file reads back damaged (chunk at byte " + std::to_string(c->offset) + ")";
          return 0;
        }
      }
    largest_ = std::max(largest_, batch.ops.size());
    ++batches;
    fn(batch);
  }
  return batches;
}

}  // namespace ni::analysis
