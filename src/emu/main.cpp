// nccl-emu: the command line. `nccl-emu [run options]` runs a job against a
// plugin; `nccl-emu bench ...` measures per-callback cost; `nccl-emu faults`
// lists the fault names.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/emu/emu.h"

namespace {

using namespace ni::emu;

bool parse_ranks(const std::string& s, std::vector<int>* out, std::string* err) {
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      const size_t dash = part.find('-');
      if (dash == std::string::npos) {
        out->push_back(std::stoi(part));
      } else {
        const int a = std::stoi(part.substr(0, dash)), b = std::stoi(part.substr(dash + 1));
        if (b < a) throw std::invalid_argument("range");
        for (int i = a; i <= b; ++i) out->push_back(i);
      }
    } catch (const std::exception&) {
      *err = "bad --ranks element '" + part + "' (use e.g. 0-3,6)";
      return false;
    }
  }
  return true;
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "nccl-emu: error: %s\n", msg.c_str());
  return 2;
}

// The run command's options as given on the command line.
struct RunArgs {
  std::string nccl = "2.30", plugin, workload, truth, pace = "realtime", ranks, net, hang;
  std::vector<std::string> faults;
  uint64_t seed = 1, start_at = 0;
  std::string wire_lock, ras_mask;
  int iters = 0, world = 0, nodes = 0, fault_op = 3, replays = 3;
  bool quiet = false;
};

void add_run_options(CLI::App& app, RunArgs& a) {
  app.add_option("--nccl", a.nccl, "NCCL release to emulate, 2.23 .. 2.32")->capture_default_str();
  app.add_option("--plugin", a.plugin, "profiler plugin .so to load (dlopen RTLD_NOW|RTLD_LOCAL)");
  app.add_option("--workload", a.workload, "workload spec (JSON); default: a small DP+TP training-like job");
  app.add_option("--truth", a.truth, "write the truth (JSON lines) here");
  app.add_option("--fault", a.faults, "inject a fault (repeatable); see `nccl-emu faults`");
  app.add_option("--pace", a.pace, "realtime: deliver KernelCh no earlier than its pTimer; none: as fast as possible")
      ->check(CLI::IsMember({"realtime", "none"}))
      ->capture_default_str();
  app.add_option("--seed", a.seed, "model seed (processes of one job must agree)")->capture_default_str();
  app.add_option("--start-at", a.start_at,
                 "job time origin, CLOCK_REALTIME ns (processes of one job pass the same value; waits until then)");
  app.add_option("--ranks", a.ranks, "world ranks this process emulates, e.g. 0-3 (default: all)");
  app.add_option("--wire-lock", a.wire_lock,
                 "with model.hca_gbps: a file the processes of one job lock (flock) around each emulated send "
                 "request, so that one is on the wire at a time on this machine");
  app.add_option("--world", a.world, "override the workload's world size");
  app.add_option("--nodes", a.nodes, "override the workload's node count");
  app.add_option("--iters", a.iters, "override the random-mix iteration count");
  app.add_option("--net-profiler", a.net, "NCCL built with NET_PROFILER=1: none|ib|socket")
      ->check(CLI::IsMember({"none", "ib", "socket"}));
  app.add_option("--fault-op", a.fault_op, "per-comm op index where one-shot faults fire")->capture_default_str();
  app.add_option("--graph-replays", a.replays, "replays per captured op (graph-replay fault)")->capture_default_str();
  app.add_option("--hang", a.hang,
                 "plant a hang or desync: a truth.hang JSON object, e.g. "
                 "'{\"kind\":\"kernel_stuck\",\"world_rank\":5,\"comm\":\"dp\",\"at_op\":3}' (overrides the workload's)");
  app.add_option("--ras-mask", a.ras_mask,
                 "2.31+: the event mask NCCL's RAS sends job-wide (e.g. 0x8002), written over the plugin's after "
                 "every comm init");
  app.add_flag("--quiet", a.quiet, "print only the bound-version line");
}

struct BenchArgs {
  std::string plugin, nccl = "2.28";
  int channels = 8, iters = 100000, runs = 5;
};

CLI::App* add_bench_command(CLI::App& app, BenchArgs& b) {
  auto* cmd = app.add_subcommand("bench", "ns per collective and per callback for any plugin");
  cmd->add_option("--plugin", b.plugin, "profiler plugin .so")->required();
  cmd->add_option("--nccl", b.nccl, "NCCL release to emulate")->capture_default_str();
  cmd->add_option("--channels", b.channels, "channels per collective")->capture_default_str();
  cmd->add_option("--iters", b.iters, "collectives per run")->capture_default_str();
  cmd->add_option("--runs", b.runs, "runs (the median is reported)")->capture_default_str();
  return cmd;
}

int run_bench(const BenchArgs& b) {
  BenchOptions bo;
  auto v = NcclVersion::parse(b.nccl);
  if (!v) return fail("unknown NCCL version '" + b.nccl + "' (supported: 2.23 .. 2.32)");
  bo.nccl = *v;
  bo.plugin_path = b.plugin;
  bo.channels = b.channels;
  bo.iters = b.iters;
  bo.runs = b.runs;
  BenchResult r = bench(bo);
  if (!r.ok) return fail(r.error);
  std::printf("nccl-emu bench: NCCL %s, bound ncclProfiler_v%d, %d channels, %d callbacks/collective\n",
              bo.nccl.str().c_str(), r.bound_abi, b.channels, r.callbacks_per_coll);
  std::printf("nccl-emu bench: %.1f ns/collective, %.2f ns/callback (median of %d runs x %d)\n", r.ns_per_coll,
              r.ns_per_callback, b.runs, b.iters);
  return 0;
}

// The workload, the faults and the overrides; "" or the error to print.
std::string make_options(const RunArgs& a, Options& o) {
  try {
    if (!a.workload.empty()) {
      std::ifstream in(a.workload);
      if (!in) return "cannot read workload file " + a.workload;
      std::stringstream ss;
      ss << in.rdbuf();
      o.workload = parse_workload_json(ss.str());
    } else {
      o.workload = default_workload(a.iters > 0 ? a.iters : 40);
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  try {
    if (!a.hang.empty()) o.workload.truth.hang = parse_hang_json(a.hang);
  } catch (const std::exception& e) {
    return e.what();
  }
  if (a.iters > 0) o.workload.iterations = a.iters;
  if (a.world > 0) o.workload.world = a.world;
  if (a.nodes > 0) o.workload.nodes = a.nodes;
  if (a.net == "ib") o.workload.net_profiler = NetProfiler::kIb;
  else if (a.net == "socket") o.workload.net_profiler = NetProfiler::kSocket;
  else if (a.net == "none") o.workload.net_profiler = NetProfiler::kNone;
  for (const std::string& f : a.faults) {
    auto ff = fault_from_name(f);
    if (!ff) return "unknown fault '" + f + "'; known: see `nccl-emu faults`";
    o.faults.push_back(*ff);
  }
  std::string err;
  if (!a.ranks.empty() && !parse_ranks(a.ranks, &o.world_ranks, &err)) return err;
  o.pace = a.pace == "none" ? Pace::kNone : Pace::kRealtime;
  o.start_at_real_ns = a.start_at;
  o.wire_lock = a.wire_lock;
  o.truth_path = a.truth;  // a process that ends by truth.hang writes its truth there first
  o.seed = a.seed;
  o.fault_op = a.fault_op;
  o.graph_replays = a.replays;
  if (!a.ras_mask.empty()) {
    char* end = nullptr;
    errno = 0;
    const unsigned long m = std::strtoul(a.ras_mask.c_str(), &end, 0);
    if (errno != 0 || end == a.ras_mask.c_str() || *end != '\0' || m > 0xffffu)
      return "bad --ras-mask '" + a.ras_mask + "' (an event mask, e.g. 0x8002; bits 0-15)";
    o.ras_mask = static_cast<int>(m);
  }
  return "";
}

void print_summary(const RunResult& r) {
  uint64_t visible = 0;
  for (const TruthOp& t : r.truth) visible += t.visible;
  std::printf("nccl-emu: ops issued (per rank, summed):");
  for (const auto& [k, n] : r.summary.ops_by_comm_kind) std::printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(n));
  std::printf("; visible to the plugin: %llu of %zu\n", static_cast<unsigned long long>(visible), r.truth.size());
  std::printf("nccl-emu: callbacks: %llu total;", static_cast<unsigned long long>(r.summary.total_callbacks));
  for (const auto& [k, n] : r.summary.callbacks) std::printf(" %s=%llu", k.c_str(), static_cast<unsigned long long>(n));
  std::printf("\nnccl-emu: wall %.2f s\n", r.summary.wall_s);
}

int run_job(const RunArgs& a) {
  Options o;
  auto v = NcclVersion::parse(a.nccl);
  if (!v) return fail("unknown NCCL version '" + a.nccl + "' (supported: 2.23 .. 2.32)");
  o.nccl = *v;
  if (a.plugin.empty()) return fail("--plugin PATH is required");
  o.plugin_path = a.plugin;
  if (std::string err = make_options(a, o); !err.empty()) return fail(err);
  if (!a.quiet)
    std::printf("nccl-emu: emulating NCCL %s (native profiler ABI v%d), plugin %s\n", o.nccl.str().c_str(),
                o.nccl.native_abi(), a.plugin.c_str());
  std::fflush(stdout);
  RunResult r = run(o);
  if (!r.ok) return fail(r.error);
  std::printf("nccl-emu: bound %s (plugin name \"%s\")\n", r.bound_symbol.c_str(), r.summary.plugin_name.c_str());
  if (!a.quiet) print_summary(r);
  if (!a.truth.empty()) {
    std::ofstream out(a.truth);
    if (!out) return fail("cannot write truth file " + a.truth);
    write_truth_jsonl(out, r);
    if (!a.quiet) std::printf("nccl-emu: truth written to %s\n", a.truth.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nccl-emu: a GPU-free NCCL that drives any NCCL profiler plugin as NCCL 2.23..2.32 would"};
  app.require_subcommand(0, 1);
  RunArgs run_args;
  add_run_options(app, run_args);
  BenchArgs bench_args;
  auto* bench_cmd = add_bench_command(app, bench_args);
  auto* faults_cmd = app.add_subcommand("faults", "list fault names");

  CLI11_PARSE(app, argc, argv);

  if (faults_cmd->parsed()) {
    for (const std::string& f : fault_names()) std::printf("%s\n", f.c_str());
    return 0;
  }
  if (bench_cmd->parsed()) return run_bench(bench_args);
  return run_job(run_args);
}
