// The upstream NCCL Inspector "v4.0" format (see reader_upstream.h).
#include "src/analysis/reader_upstream.h"

#include <string>

#include "include/nccl_inspector/schema.h"
#include "src/analysis/reader.h"

namespace ni::analysis::reader_detail {

namespace sc = ni::schema;
namespace up = ni::schema::upstream;

void upstream_header(dom::element v, Line& L) {
  dom::object o;
  if (v.get_object().get(o)) return;
  L.upstream = true;
  for (dom::key_value_pair f : o) {
    const std::string_view k = f.key;
    const dom::element fv = f.value;
    if (k == up::kId) {
      std::string_view s;
      if (get_str(fv, s)) L.has_hash = parse_hash(s, L.comm_hash);
      else L.has_hash = get_u64(fv, L.comm_hash);
    } else if (k == up::kCommName) {
      L.has_comm_name = get_str(fv, L.comm_name);
      if (L.comm_name == up::kCommNameUnknown) L.comm_name = {};
    } else if (k == up::kRank) {
      get_i64(fv, L.rank);
    } else if (k == up::kNranks) {
      get_i64(fv, L.nranks);
    } else if (k == up::kNnodes) {
      get_i64(fv, L.nnodes);
    }
  }
}

void upstream_metadata(dom::element v, Line& L) {
  dom::object o;
  if (v.get_object().get(o)) return;
  L.upstream = true;
  for (dom::key_value_pair f : o) {
    const std::string_view k = f.key;
    const dom::element fv = f.value;
    if (k == up::kFormatVersion) get_str(fv, L.up_version);
    else if (k == up::kHostname) get_str(fv, L.host);
    else if (k == up::kPid) get_i64(fv, L.pid);
    else if (k == up::kGitRev) get_str(fv, L.plugin_version);
  }
}

void upstream_perf(dom::element v, bool p2p, Line& L) {
  dom::object o;
  if (v.get_object().get(o)) return;
  L.upstream = true;
  L.type = p2p ? sc::kTypeP2p : sc::kTypeColl;
  L.has_type = true;
  // Every key but the op's name carries the section's prefix ("coll_" / "p2p_"),
  // dropped by length: the names after it are the same for both sections.
  const std::size_t pre = (p2p ? up::kP2pPrefix : up::kCollPrefix).size();
  for (dom::key_value_pair f : o) {
    const std::string_view k = f.key;
    const dom::element fv = f.value;
    if (k.size() <= pre) {
      if (k == up::kCollFunc || k == up::kP2pFunc) L.has_func = get_str(fv, L.func);
      continue;
    }
    const std::string_view s = k.substr(pre);
    if (s == up::kSn) L.has_seq = get_u64(fv, L.seq);
    else if (s == up::kMsgSizeBytes) L.has_bytes = get_u64(fv, L.bytes);
    else if (s == up::kExecTimeUs) get_f64(fv, L.dur_us);
    else if (s == up::kTimingSource) get_str(fv, L.timing);
    else if (s == up::kBusbwGbs) get_f64(fv, L.busbw);
    else if (s == up::kPeer) get_i64(fv, L.peer);
  }
}

void upstream_file_info(const Line& L, FileInfo& info) {
  info.format = FileFormat::kUpstreamV4;
  info.format_string = std::string(L.up_version);
  info.format_version = 4;
  info.plugin_version = std::string(L.plugin_version);
  info.host = std::string(L.host);
  info.pid = L.pid;
}

}  // namespace ni::analysis::reader_detail
