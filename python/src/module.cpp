// nccl_inspector._core: the analyzer's C++ reader and analyses for Python
// (pybind11). The pandas side is python/nccl_inspector/__init__.py; this file
// hands it columns (numpy arrays, lists of strings) and result tables.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "include/nccl_inspector/version.h"
#include "src/analysis/analysis.h"
#include "src/analysis/collect_sink.h"
#include "src/analysis/locate.h"
#include "src/analysis/reader.h"
#include "src/analysis/tags.h"

namespace py = pybind11;
namespace ana = ni::analysis;

namespace {

// Every op, with the detail a DataFrame flattens into columns: network bytes
// and wait, the slowest channel, and per HCA device its bytes and wire time.
struct OpsSink : ana::OpSink {
  bool wants_detail() const override { return true; }
  void on_op(const ana::Op& op, const ana::OpDetail* d, const ana::FileInfo&) override {
    ops.push_back(op);
    Detail x;
    if (d != nullptr) {
      x.net_send = d->net_send_bytes;
      x.user_tag = d->user_tag;
      x.net_recv = d->net_recv_bytes;
      x.net_wait_us = d->net_wait_us;
      x.slow_ch = d->slow_ch;
      x.slow_us = d->slow_ch >= 0 ? d->slow_us : ana::kNaN;
      x.median_us = d->slow_ch >= 0 ? d->median_us : ana::kNaN;
      x.hcas = d->hcas;
      x.phases = d->phases;
    }
    detail.push_back(std::move(x));
  }
  void merge(OpsSink&& o) {
    ops.insert(ops.end(), o.ops.begin(), o.ops.end());
    detail.insert(detail.end(), std::make_move_iterator(o.detail.begin()), std::make_move_iterator(o.detail.end()));
  }
  struct Detail {
    std::uint64_t net_send = 0, net_recv = 0, user_tag = 0;
    double net_wait_us = ana::kNaN, slow_us = ana::kNaN, median_us = ana::kNaN;
    std::array<std::array<double, 3>, 3> phases{{{ana::kNaN, ana::kNaN, ana::kNaN}, {ana::kNaN, ana::kNaN, ana::kNaN},
                                                 {ana::kNaN, ana::kNaN, ana::kNaN}}};
    int slow_ch = -1;
    std::vector<ana::HcaUse> hcas;
  };
  std::vector<ana::Op> ops;
  std::vector<Detail> detail;
};

std::vector<std::string> discover(const std::vector<std::string>& inputs) {
  ana::Discovery d = ana::discover_files(inputs);
  if (!d.error.empty()) throw py::value_error(d.error);
  return d.files;
}

template <class T>
py::array_t<T> column(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// "single_rank", "nvlink_only" (every rank on one node), "network_only" (one
// rank per node: every hop crosses the network), "mixed".
std::string comm_role(int nranks, int nnodes) {
  if (nranks <= 1) return "single_rank";
  if (nnodes <= 0) return "unknown";
  if (nnodes == 1) return "nvlink_only";
  if (nnodes == nranks) return "network_only";
  return "mixed";
}

py::dict read_ops(const std::vector<std::string>& inputs, int threads) {
  const std::vector<std::string> files = discover(inputs);
  ana::ReadResult res;
  ana::ReadOptions ro;
  ro.progress = 0;
  std::unique_ptr<OpsSink> s;
  {
    py::gil_scoped_release unlocked;
    s = ana::read_merged<OpsSink>(files, ro, threads > 0 ? threads : ana::default_threads(), res);
  }
  const std::size_t n = s->ops.size();
  std::vector<std::int64_t> start(n), seq(n), bytes(n), rank(n), nranks(n), nnodes(n), peer(n), nch(n), slow_ch(n),
      net_send(n), net_recv(n), file(n);
  std::vector<std::uint64_t> hash(n), user_tag(n);
  std::vector<double> dur(n), busbw(n), algbw(n), bal(n), net_wait(n), slow_us(n), median_us(n);
  // Kernel phases (NCCL 2.31+): the median channel's time of each phase, and initial_sync's extremes.
  std::vector<double> sync_us(n), sync_min_us(n), sync_max_us(n), compute_us(n), final_sync_us(n);
  std::vector<bool> has_start(n), reclaimed(n), partial(n), graph(n), api_only(n), kernel_desync(n);
  py::list kind, func, algo, proto, kernel_variant, timing, transport, comm_name, role, comm_hash, host, pid;
  std::map<std::string, std::vector<double>> hca_bytes, hca_wire;
  for (std::size_t i = 0; i < n; ++i) {
    const ana::Op& o = s->ops[i];
    const OpsSink::Detail& d = s->detail[i];
    start[i] = o.has_start() ? o.start_wall_ns : 0;
    has_start[i] = o.has_start();
    seq[i] = static_cast<std::int64_t>(o.seq);
    bytes[i] = static_cast<std::int64_t>(o.bytes);
    rank[i] = o.rank;
    nranks[i] = o.nranks;
    nnodes[i] = o.nnodes;
    peer[i] = o.peer;
    nch[i] = o.nchannels;
    hash[i] = o.comm_hash;
    dur[i] = o.dur_us;
    busbw[i] = o.busbw_gbs;
    // algbw = bytes / time, as nccl-tests; none where the time is the CPU's.
    algbw[i] = ana::cpu_timed(o.timing) || !(o.dur_us > 0) ? ana::kNaN : static_cast<double>(o.bytes) / (o.dur_us * 1e3);
    bal[i] = o.ch_balance < 0 ? ana::kNaN : o.ch_balance;
    net_wait[i] = d.net_wait_us;
    slow_ch[i] = d.slow_ch;
    slow_us[i] = d.slow_us;
    median_us[i] = d.median_us;
    net_send[i] = static_cast<std::int64_t>(d.net_send);
    net_recv[i] = static_cast<std::int64_t>(d.net_recv);
    user_tag[i] = d.user_tag;
    sync_min_us[i] = d.phases[0][0];
    sync_us[i] = d.phases[0][1];
    sync_max_us[i] = d.phases[0][2];
    compute_us[i] = d.phases[1][1];
    final_sync_us[i] = d.phases[2][1];
    file[i] = o.file_idx;
    reclaimed[i] = (o.flags & ana::kFlagReclaimed) != 0;
    partial[i] = (o.flags & ana::kFlagPartial) != 0;
    graph[i] = (o.flags & ana::kFlagGraph) != 0;
    api_only[i] = (o.flags & ana::kFlagApiOnly) != 0;
    kernel_desync[i] = (o.flags & ana::kFlagKernelDesync) != 0;
    kind.append(std::string(ana::to_string(o.kind)));
    func.append(std::string(ana::to_string(o.func)));
    algo.append(o.algo == ana::Algo::kUnknown ? py::object(py::none()) : py::str(std::string(ana::to_string(o.algo))));
    kernel_variant.append(ana::is_sym(o.algo) && !ana::sym_variant(o.algo).empty()
                              ? py::object(py::str(std::string(ana::sym_variant(o.algo))))
                              : py::object(py::none()));
    proto.append(o.proto == ana::Proto::kUnknown ? py::object(py::none()) : py::str(std::string(ana::to_string(o.proto))));
    timing.append(std::string(ana::to_string(o.timing)));
    transport.append(o.transport == 1 ? py::object(py::str("intra_node"))
                     : o.transport == 2 ? py::object(py::str("network"))
                                        : py::object(py::none()));
    auto nm = res.comm_names.find(o.comm_hash);
    comm_name.append(nm == res.comm_names.end() || nm->second.empty() ? py::object(py::none()) : py::str(nm->second));
    role.append(comm_role(o.nranks, o.nnodes));
    comm_hash.append(ana::hex_hash(o.comm_hash));
    const ana::FileInfo& f = res.files[o.file_idx];
    host.append(f.host);
    pid.append(f.pid);
    for (const ana::HcaUse& h : d.hcas) {
      auto& b = hca_bytes[h.dev];
      auto& w = hca_wire[h.dev];
      b.resize(n, ana::kNaN);
      w.resize(n, ana::kNaN);
      b[i] = static_cast<double>(h.bytes);
      w[i] = h.wire_us;
    }
  }
  auto bools = [](const std::vector<bool>& v) {
    py::array_t<bool> a(static_cast<py::ssize_t>(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) a.mutable_data()[i] = v[i];
    return a;
  };
  // The tags' names, from the logs' tag records (ncclInspectorNameTag); None where unnamed or untagged.
  const ana::TagNames names = ana::tag_names(res, {});
  py::list tag_name;
  for (std::size_t i = 0; i < n; ++i) {
    auto it = user_tag[i] != 0 ? names.names.find(user_tag[i]) : names.names.end();
    tag_name.append(it == names.names.end() ? py::object(py::none()) : py::object(py::str(it->second)));
  }
  py::dict c;
  c["host"] = host;
  c["pid"] = pid;
  c["kind"] = kind;
  c["comm_hash"] = comm_hash;
  c["comm_name"] = comm_name;
  c["comm_role"] = role;
  c["rank"] = column(rank);
  c["nranks"] = column(nranks);
  c["nnodes"] = column(nnodes);
  c["func"] = func;
  c["seq"] = column(seq);
  c["peer"] = column(peer);
  c["bytes"] = column(bytes);
  c["algo"] = algo;
  c["proto"] = proto;
  c["kernel_variant"] = kernel_variant;
  c["nchannels"] = column(nch);
  c["start_wall_ns"] = column(start);
  c["has_start"] = bools(has_start);
  c["dur_us"] = column(dur);
  c["algbw_gbs"] = column(algbw);
  c["busbw_gbs"] = column(busbw);
  c["ch_balance"] = column(bal);
  c["timing"] = timing;
  c["transport"] = transport;
  c["reclaimed"] = bools(reclaimed);
  c["partial"] = bools(partial);
  c["graph"] = bools(graph);
  c["api_only"] = bools(api_only);
  c["kernel_desync"] = bools(kernel_desync);
  c["initial_sync_us"] = column(sync_us);
  c["initial_sync_min_us"] = column(sync_min_us);
  c["initial_sync_max_us"] = column(sync_max_us);
  c["compute_us"] = column(compute_us);
  c["final_sync_us"] = column(final_sync_us);
  c["user_tag"] = column(user_tag);  // uint64: 0 = no tag (NCCL before 2.31, or an untagged call)
  c["tag_name"] = tag_name;
  c["net_send_bytes"] = column(net_send);
  c["net_recv_bytes"] = column(net_recv);
  c["net_wait_us"] = column(net_wait);
  c["slow_channel"] = column(slow_ch);
  c["slow_channel_us"] = column(slow_us);
  c["median_channel_us"] = column(median_us);
  for (auto& [dev, v] : hca_bytes) {
    v.resize(n, ana::kNaN);
    c[py::str("hca_" + dev + "_bytes")] = column(v);
  }
  for (auto& [dev, v] : hca_wire) {
    v.resize(n, ana::kNaN);
    c[py::str("hca_" + dev + "_wire_us")] = column(v);
  }
  py::list fl;
  for (const std::string& f : files) fl.append(f);
  c["file"] = column(file);
  py::dict out;
  out["columns"] = c;
  out["files"] = fl;
  out["bad_lines"] = res.bad_lines;
  out["truncated_files"] = res.truncated_files;
  out["no_duration"] = res.no_duration;
  return out;
}

// Sets an analysis's option from a Python value (by the CLI flag's name,
// without the dashes, '-' as '_').
void set_option(const ana::OptionSpec& spec, const py::handle& v) {
  std::visit(
      [&](auto* target) {
        using T = std::remove_pointer_t<decltype(target)>;
        try {
          if constexpr (std::is_same_v<T, std::size_t>) {
            // Not a negative number wrapped into a huge count.
            if (!py::isinstance<py::int_>(v) || v.cast<long long>() < 0) throw py::cast_error();
          }
          *target = v.cast<T>();
        } catch (const py::cast_error&) {
          const char* want = std::is_same_v<T, bool> ? "True or False"
                             : std::is_same_v<T, double> ? "a number"
                             : std::is_same_v<T, std::size_t> ? "a count (int >= 0)"
                             : std::is_same_v<T, std::string> ? "a string"
                                                              : "a list of strings";
          throw py::value_error("option " + spec.names + ": expected " + want + ", got " +
                                std::string(py::str(py::repr(v))));
        }
      },
      spec.target);
}

py::object cell(const ana::Cell& c) {
  switch (c.kind) {
    case ana::Cell::kStr: return py::str(c.s);
    case ana::Cell::kInt: return py::int_(c.i);
    case ana::Cell::kNum: return std::isnan(c.d) ? py::object(py::none()) : py::object(py::float_(c.d));
    default: return py::none();
  }
}

// Runs a registered analysis (its CLI subcommand's name) on the inputs with
// the options given and returns its tables: [(name, title, columns, rows, notes)].
py::list analyse(const std::string& name, const std::vector<std::string>& inputs, const py::dict& options,
                 int threads) {
  auto analyses = ana::make_analyses();
  auto it = std::find_if(analyses.begin(), analyses.end(), [&](const auto& a) { return a->name() == name; });
  if (it == analyses.end()) throw py::value_error("no analysis named " + name);
  ana::Analysis& a = **it;
  if (a.input() == ana::Input::kOwnInputs) throw py::value_error(name + " takes its own inputs: use the CLI");
  std::vector<ana::OptionSpec> specs;
  a.options(specs);
  for (const auto& [k, v] : options) {
    std::string key = py::str(k);
    std::replace(key.begin(), key.end(), '_', '-');
    auto s = std::find_if(specs.begin(), specs.end(), [&](const ana::OptionSpec& o) {
      const std::string& nm = o.names;
      return nm == "--" + key || nm.rfind("--" + key + ",", 0) == 0 || nm.find(",--" + key) != std::string::npos;
    });
    if (s == specs.end()) throw py::value_error(name + " has no option " + key);
    set_option(*s, v);
  }
  if (std::string err = a.check("table"); !err.empty()) throw py::value_error(err);
  ana::FilesInput in;
  in.files = discover(inputs);
  in.threads = threads > 0 ? threads : ana::default_threads();
  in.ro.progress = 0;
  ana::AnalysisResult r;
  {
    py::gil_scoped_release unlocked;
    if (a.input() == ana::Input::kFiles) {
      r = a.run_files(in);
    } else {
      ana::ReadResult res;
      auto ops = ana::read_merged<ana::CollectSink>(in.files, in.ro, in.threads, res,
                                                    a.input() == ana::Input::kOpsDetail);
      if (res.ops == 0) {
        r.error = "no op records in the input";
      } else {
        ana::assign_racks(res, nullptr);
        r = a.run(ana::AnalysisInput{*ops, res});
      }
    }
  }
  if (!r.error.empty()) throw py::value_error(r.error);
  py::list out;
  for (const ana::Section& sec : r.report.sections) {
    py::list rows;
    for (const auto& row : sec.table.rows) {
      py::list pr;
      for (const ana::Cell& c : row) pr.append(cell(c));
      rows.append(pr);
    }
    out.append(py::make_tuple(sec.name, sec.title, sec.table.columns, rows, sec.notes));
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "nccl-inspector's C++ reader and analyses (use nccl_inspector.LogProcessor)";
  m.attr("__version__") = std::string(ni::kVersion);
  m.def("read_ops", &read_ops, py::arg("inputs"), py::arg("threads") = 0,
        "every op record of the inputs as columns");
  m.def("analyse", &analyse, py::arg("name"), py::arg("inputs"), py::arg("options") = py::dict(),
        py::arg("threads") = 0, "a registered analysis's result tables");
  m.def("analyses", [] {
    std::vector<std::string> names;
    for (const auto& a : ana::make_analyses())
      if (a->input() != ana::Input::kOwnInputs) names.emplace_back(a->name());
    return names;
  });
}
