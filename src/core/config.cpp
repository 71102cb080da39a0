#include "src/core/config.h"
#include "src/core/edit_distance.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

namespace ni {
namespace {

// The single table. Parsing, logging and docs all derive from it.
struct Entry {
  Setting s;
  void (*assign_bool)(Config&, bool);
  void (*assign_int)(Config&, int64_t);
  void (*assign_str)(Config&, std::string);
  std::string (*show)(const Config&);
};

#define NI_BOOL(field) \
  [](Config& c, bool v) { c.field = v; }, nullptr, nullptr, [](const Config& c) { return std::string(c.field ? "1" : "0"); }
#define NI_INT(field) \
  nullptr, [](Config& c, int64_t v) { c.field = v; }, nullptr, [](const Config& c) { return std::to_string(c.field); }
#define NI_STR(field) \
  nullptr, nullptr, [](Config& c, std::string v) { c.field = std::move(v); }, [](const Config& c) { return c.field; }

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      {{"NCCL_INSPECTOR_ENABLE", SettingType::kBool, "1", 0, 1,
        "0 turns the plugin into a no-op (every communicator gets a null context). Loading the plugin "
        "through NCCL_PROFILER_PLUGIN is the opt-in, so the default is on."},
       NI_BOOL(enable)},
      {{"NCCL_INSPECTOR_DUMP_DIR", SettingType::kString, "nccl-inspector-<SLURM_JOB_ID>", 0, 0,
        "Directory for the logs, created if missing (mode from the umask). Default "
        "nccl-inspector-<SLURM_JOB_ID>, or nccl-inspector-unknown-jobid outside SLURM, relative to the "
        "working directory."},
       NI_STR(dump_dir)},
      {{"NCCL_INSPECTOR_HOSTNAME", SettingType::kString, "<gethostname()>", 0, 0,
        "Host name written in the log and its file name (characters other than letters, digits, '-', '_' "
        "and '.' become '_'). For containers whose hostname is not the node's: pass the node's name, e.g. "
        "docker -e NCCL_INSPECTOR_HOSTNAME=$(hostname); the analyzer groups ranks by host with it."},
       NI_STR(host_name)},
      {{"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", SettingType::kInt, "100000", 100, 60000000,
        "How often the dump thread drains the rings and writes. It also wakes early when a ring passes "
        "half full, and finalize / process exit always drain at once."},
       NI_INT(dump_interval_us)},
      {{"NCCL_INSPECTOR_DUMP_VERBOSE", SettingType::kBool, "0", 0, 1,
        "Adds per-channel GPU times to every op record."},
       NI_BOOL(dump_verbose)},
      {{"NCCL_INSPECTOR_JSON_DUMP", SettingType::kBool, "1", 0, 1,
        "Write the gzip JSON-lines log."},
       NI_BOOL(json_dump)},
      {{"NCCL_INSPECTOR_PROM_DUMP", SettingType::kBool, "0", 0, 1,
        "Also write a Prometheus textfile (node_exporter textfile collector)."},
       NI_BOOL(prom_dump)},
      {{"NCCL_INSPECTOR_PROM_INTERVAL_MICROSECONDS", SettingType::kInt, "10000000", 100000, 3600000000,
        "How often the Prometheus file is rewritten (atomically)."},
       NI_INT(prom_interval_us)},
      {{"NCCL_INSPECTOR_PROM_DIR", SettingType::kString, "<dump dir>", 0, 0,
        "Directory for the Prometheus file (point node_exporter's --collector.textfile.directory here)."},
       NI_STR(prom_dir)},
      {{"NCCL_INSPECTOR_PROM_EXTRA_LABELS", SettingType::kBool, "0", 0, 1,
        "Adds the labels pid and comm_hash to the Prometheus series: series per process and per communicator "
        "instance (each new process or communicator starts new ones). Off: series are per host, job, rank and "
        "communicator name (see docs/configuration.md, cardinality)."},
       NI_BOOL(prom_extra_labels)},
      {{"NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", SettingType::kInt, "8192", 0, INT64_MAX,
        "Ops smaller than this many bytes are not recorded (counted as filtered). 0 records everything."},
       NI_INT(min_size_bytes)},
      {{"NCCL_INSPECTOR_ENABLE_P2P", SettingType::kBool, "1", 0, 1,
        "Record point-to-point operations. With 0 the plugin still asks NCCL 2.26+ for P2p events and drops them at "
        "once: a Send/Recv to itself puts NCCL's kernel timestamps out of step (kernel_desync, docs/log-format.md) "
        "and only its P2p event shows it."},
       NI_BOOL(enable_p2p)},
      {{"NCCL_INSPECTOR_ENABLE_NET", SettingType::kBool, "0", 0, 1,
        "Ask NCCL for ProxyOp, ProxyStep and NetPlugin events: network bytes, step time split and "
        "per-HCA traffic. Costs progress-thread time."},
       NI_BOOL(enable_net)},
      {{"NCCL_INSPECTOR_KERNEL_TIMING", SettingType::kBool, "1", 0, 1,
        "Ask NCCL 2.26+ for KernelCh events: each op's GPU time per channel (timing `gpu`, bandwidth). On NCCL "
        "2.31.2 turning KernelCh on also turns on NCCL's device-side kernel-phase instrumentation, measured at "
        "4.3-13.3 % slower 128 KB-4 MB AllReduce on 8xA100 (NVIDIA/nccl #2355; 0.1-1.1 % on 2.29.7). 0: no "
        "KernelCh, so that cost is gone and ops are CPU-timed (`enqueue_cpu`, or `net_cpu` with network events), "
        "with no bandwidth."},
       NI_BOOL(kernel_timing)},
      {{"NCCL_INSPECTOR_ENABLE_PHASES", SettingType::kBool, "0", 0, 1,
        "Ask NCCL 2.31+ (ABI v7) for KernelPhase events: per op, how long its channels spent waiting for the "
        "peers (initial_sync), moving data (compute) and in the closing barrier (final_sync), as the shortest, "
        "median and longest channel (`phases`). A rank whose initial_sync is short while its peers' are long "
        "arrived last, whatever the clocks say. Costs the job time: NCCL's device-side phase instrumentation "
        "made 128 KB-4 MB AllReduce 4.3-13.3 % slower on 8xA100 in 2.31.2 (NVIDIA/nccl #2355, #2357). Needs "
        "NCCL_INSPECTOR_KERNEL_TIMING=1; ignored before NCCL 2.31."},
       NI_BOOL(enable_phases)},
      {{"NCCL_INSPECTOR_ENABLE_CE", SettingType::kBool, "1", 0, 1,
        "Record copy-engine collectives (ABI v6, NCCL 2.29+)."},
       NI_BOOL(enable_ce)},
      {{"NCCL_INSPECTOR_CE_GPU_TIMING", SettingType::kBool, "1", 0, 1,
        "Time copy-engine collectives on the GPU: CUDA events recorded on their stream at CeColl start and "
        "stop, through the CUDA driver already in the process (never loaded by the plugin), polled by the "
        "dump thread (timing `cuda_event`). 0, or no driver: their time is the enqueue's (`enqueue_cpu`)."},
       NI_BOOL(ce_gpu_timing)},
      {{"NCCL_INSPECTOR_SAMPLE_EVERY", SettingType::kInt, "1", 1, 1000000,
        "Record one op in N per communicator (1 = every op). Skipped ops are counted as sampled out."},
       NI_INT(sample_every)},
      {{"NCCL_INSPECTOR_RING_RECORDS", SettingType::kInt, "512", 16, 1048576,
        "Records per thread ring (576 bytes each), the ring every record goes through while the dump thread "
        "keeps up."},
       NI_INT(ring_records)},
      {{"NCCL_INSPECTOR_BURST_RECORDS", SettingType::kInt, "8192", 0, 1048576,
        "Records of a thread's burst ring, made when its steady ring is first full: records go there, in "
        "order, until the dump thread has taken them all (576 bytes each; address space committed as it is "
        "first filled). The default holds a 4,096-op group between two dumps. 0: no burst rings. A full burst "
        "ring drops the record and counts the drop."},
       NI_INT(burst_records)},
      {{"NCCL_INSPECTOR_BURST_RINGS", SettingType::kInt, "2", 0, 1024,
        "Most threads of a process that get a burst ring (the first ones to fill their steady ring); with the "
        "defaults, at most 8 MiB for bursts. Others drop what their steady ring cannot hold, counted."},
       NI_INT(burst_rings)},
      {{"NCCL_INSPECTOR_POOL_OPS", SettingType::kInt, "8192", 16, 1048576,
        "Most in-flight ops tracked per communicator (2 KiB each; the pool grows in chunks of 64 only as that "
        "many are in flight at once, and keeps them until the comm ends). When exhausted, new ops are counted "
        "as dropped."},
       NI_INT(pool_ops)},
      {{"NCCL_INSPECTOR_OP_TIMEOUT_MS", SettingType::kInt, "10000", 10, 86400000,
        "An op whose kernel channels have not all stopped after this long is written with what it has "
        "and marked reclaimed."},
       NI_INT(op_timeout_ms)},
      {{"NCCL_INSPECTOR_HANG_MS", SettingType::kInt, "5000", 0, 86400000,
        "An op in flight this long is written in its comm's next `progress` line (with its channels and, with "
        "network events, its steps per peer); a comm whose progress stopped for this long gets one too. "
        "Keep it below NCCL_INSPECTOR_OP_TIMEOUT_MS. 0 = no progress lines."},
       NI_INT(hang_ms)},
      {{"NCCL_INSPECTOR_SIGNAL_FLUSH", SettingType::kBool, "1", 0, 1,
        "On a SIGTERM or SIGABRT the application does not handle: write what is pending (records, progress) "
        "before the process dies (waits at most 3 s, then dies as it would have). Installed only where the "
        "signal's action is the default."},
       NI_BOOL(signal_flush)},
      {{"NCCL_INSPECTOR_COMPRESSION_LEVEL", SettingType::kInt, "1", 0, 12,
        "gzip (libdeflate) level; 0 stores uncompressed gzip members."},
       NI_INT(compression_level)},
      {{"NCCL_INSPECTOR_ROTATE_MB", SettingType::kInt, "256", 0, 1048576,
        "Start a new log file after this many MB of compressed output (0 = never)."},
       NI_INT(rotate_mb)},
      {{"NCCL_INSPECTOR_STATS_INTERVAL_MS", SettingType::kInt, "10000", 100, 86400000,
        "How often a stats record (written, dropped per reason, ring high-water) is written."},
       NI_INT(stats_interval_ms)},
  };
  return t;
}

bool parse_bool(const char* s, bool* out) {
  std::string v(s);
  for (auto& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (v == "1" || v == "true" || v == "yes" || v == "on") { *out = true; return true; }
  if (v == "0" || v == "false" || v == "no" || v == "off") { *out = false; return true; }
  return false;
}

bool parse_int(const char* s, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s) return false;
  while (*end == ' ' || *end == '\t') ++end;
  if (*end != '\0') return false;
  *out = v;
  return true;
}

constexpr std::string_view kPrefix = "NCCL_INSPECTOR_";

bool is_setting(std::string_view name) {
  for (const auto& e : table())
    if (e.s.env == name) return true;
  return false;
}

// One warning per unknown NCCL_INSPECTOR_* name, in the order given.
void warn_unknown(const std::vector<std::string>& env_names, const Warn& warn) {
  std::set<std::string> seen;
  for (const auto& entry : env_names) {
    std::string name = entry.substr(0, entry.find('='));
    if (name.compare(0, kPrefix.size(), kPrefix) != 0 || is_setting(name)) continue;
    if (!seen.insert(name).second) continue;
    std::string hint = closest_setting(name);
    warn(name + " is not a setting of this plugin and is ignored" +
         (hint.empty() ? std::string(" (docs/configuration.md lists them)") : "; did you mean " + hint + "?"));
  }
}

}  // namespace

std::string closest_setting(std::string_view name) {
  std::string_view best;
  size_t best_d = SIZE_MAX;
  for (const auto& e : table()) {
    size_t d = edit_distance(name, e.s.env);
    if (d < best_d) {
      best_d = d;
      best = e.s.env;
    }
  }
  // A typo is a few edits of the part after the prefix: at most a third of
  // it, and never fewer than 2 (a transposition plus one slip).
  size_t tail = name.size() > kPrefix.size() ? name.size() - kPrefix.size() : 0;
  size_t limit = std::max<size_t>(2, tail / 3);
  return best_d <= limit ? std::string(best) : std::string();
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> s = [] {
    std::vector<Setting> v;
    for (const auto& e : table()) v.push_back(e.s);
    return v;
  }();
  return s;
}

Config load_config(const GetEnv& getenv_fn, const Warn& warn) {
  Config c;
  for (const auto& e : table()) {
    std::string name(e.s.env);
    const char* raw = getenv_fn(name.c_str());
    if (raw == nullptr) continue;
    switch (e.s.type) {
      case SettingType::kBool: {
        bool b = false;
        if (parse_bool(raw, &b)) {
          e.assign_bool(c, b);
        } else {
          warn(name + "='" + raw + "' is not a boolean (0/1); using the default " + std::string(e.s.default_text));
        }
        break;
      }
      case SettingType::kInt: {
        int64_t i = 0;
        if (!parse_int(raw, &i)) {
          warn(name + "='" + raw + "' is not an integer; using the default " + std::string(e.s.default_text));
        } else if (i < e.s.min || i > e.s.max) {
          warn(name + "=" + raw + " is outside [" + std::to_string(e.s.min) + ", " + std::to_string(e.s.max) +
               "]; using the default " + std::string(e.s.default_text));
        } else {
          e.assign_int(c, i);
        }
        break;
      }
      case SettingType::kString:
        if (raw[0] != '\0') e.assign_str(c, raw);
        break;
    }
  }
  if (c.dump_dir.empty()) c.dump_dir = default_dump_dir(getenv_fn);
  if (c.prom_dir.empty()) c.prom_dir = c.dump_dir;
  return c;
}

Config load_config(const GetEnv& getenv_fn, const Warn& warn, const std::vector<std::string>& env_names) {
  warn_unknown(env_names, warn);
  return load_config(getenv_fn, warn);
}

Config load_config_from_env(const Warn& warn) {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, kPrefix.data(), kPrefix.size()) == 0) names.emplace_back(*e, std::strcspn(*e, "="));
  return load_config([](const char* n) { return std::getenv(n); }, warn, names);
}

std::string default_dump_dir(const GetEnv& getenv_fn) {
  const char* job = getenv_fn("SLURM_JOB_ID");
  if (job == nullptr || job[0] == '\0') job = getenv_fn("SLURM_JOBID");
  if (job == nullptr || job[0] == '\0') return "nccl-inspector-unknown-jobid";
  std::string dir = "nccl-inspector-";
  for (const char* p = job; *p; ++p) {
    char ch = *p;
    bool ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
              ch == '-' || ch == '.';
    dir.push_back(ok ? ch : '_');  // never let the job id escape the directory name
  }
  return dir;
}

std::string describe(const Config& c) {
  std::ostringstream os;
  bool first = true;
  for (const auto& e : table()) {
    if (!first) os << ' ';
    first = false;
    os << e.s.env << '=' << e.show(c);
  }
  return os.str();
}

std::string settings_markdown() {
  std::ostringstream os;
  os << "| variable | type | default | range | meaning |\n|---|---|---|---|---|\n";
  for (const auto& s : settings()) {
    const char* type = s.type == SettingType::kBool ? "bool" : s.type == SettingType::kInt ? "int" : "string";
    std::string range = s.type == SettingType::kInt ? std::to_string(s.min) + " .. " + std::to_string(s.max)
                        : s.type == SettingType::kBool ? "0, 1" : "";
    os << "| `" << s.env << "` | " << type << " | `" << s.default_text << "` | " << range << " | " << s.doc << " |\n";
  }
  return os.str();
}

}  // namespace ni
