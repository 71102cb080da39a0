// The plugin's configuration: one table of every setting (environment
// variable, type, default, range, description). The parser, the effective
// configuration log line and docs/configuration.md all come from this table.
// Cold path only: read once per library load, at the first init.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ni {

struct Config {
  bool enable = true;                  // NCCL_INSPECTOR_ENABLE
  std::string dump_dir;                // NCCL_INSPECTOR_DUMP_DIR ("" = derived default)
  std::string host_name;               // NCCL_INSPECTOR_HOSTNAME ("" = gethostname())
  int64_t dump_interval_us = 100000;   // NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS
  bool dump_verbose = false;           // NCCL_INSPECTOR_DUMP_VERBOSE
  bool json_dump = true;               // NCCL_INSPECTOR_JSON_DUMP
  bool prom_dump = false;              // NCCL_INSPECTOR_PROM_DUMP
  int64_t prom_interval_us = 10000000; // NCCL_INSPECTOR_PROM_INTERVAL_MICROSECONDS
  std::string prom_dir;                // NCCL_INSPECTOR_PROM_DIR ("" = dump dir)
  bool prom_extra_labels = false;      // NCCL_INSPECTOR_PROM_EXTRA_LABELS
  int64_t min_size_bytes = 8192;       // NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES
  bool enable_p2p = true;              // NCCL_INSPECTOR_ENABLE_P2P
  bool enable_net = false;             // NCCL_INSPECTOR_ENABLE_NET
  bool enable_ce = true;               // NCCL_INSPECTOR_ENABLE_CE
  bool kernel_timing = true;           // NCCL_INSPECTOR_KERNEL_TIMING
  bool enable_phases = false;          // NCCL_INSPECTOR_ENABLE_PHASES
  bool ce_gpu_timing = true;           // NCCL_INSPECTOR_CE_GPU_TIMING
  int64_t sample_every = 1;            // NCCL_INSPECTOR_SAMPLE_EVERY
  int64_t ring_records = 512;          // NCCL_INSPECTOR_RING_RECORDS
  int64_t burst_records = 8192;        // NCCL_INSPECTOR_BURST_RECORDS
  int64_t burst_rings = 2;             // NCCL_INSPECTOR_BURST_RINGS
  int64_t pool_ops = 8192;             // NCCL_INSPECTOR_POOL_OPS
  int64_t op_timeout_ms = 10000;       // NCCL_INSPECTOR_OP_TIMEOUT_MS
  int64_t hang_ms = 5000;              // NCCL_INSPECTOR_HANG_MS (0 = no progress lines)
  bool signal_flush = true;            // NCCL_INSPECTOR_SIGNAL_FLUSH
  int64_t compression_level = 1;       // NCCL_INSPECTOR_COMPRESSION_LEVEL
  int64_t rotate_mb = 256;             // NCCL_INSPECTOR_ROTATE_MB
  int64_t stats_interval_ms = 10000;   // NCCL_INSPECTOR_STATS_INTERVAL_MS
};

enum class SettingType { kBool, kInt, kString };

struct Setting {
  std::string_view env;
  SettingType type;
  std::string_view default_text;  // as documented
  int64_t min;                    // ints only
  int64_t max;                    // ints only
  std::string_view doc;
};

// Every setting, in documentation order.
const std::vector<Setting>& settings();

// Reads the settings through `getenv_fn` (std::getenv by default). Each bad
// value is reported through `warn` with the setting's name, the bad text and
// the default used instead.
using GetEnv = std::function<const char*(const char*)>;
using Warn = std::function<void(const std::string&)>;
Config load_config(const GetEnv& getenv_fn, const Warn& warn);
// The same, and every NCCL_INSPECTOR_* name in `env_names` (the names of the
// environment, "NAME" or "NAME=value") that is no setting gets one warning,
// naming the closest setting when one is close (a typo must not be ignored
// silently: NCCL_INSPECTOR_ENABEL=0 would leave profiling on).
Config load_config(const GetEnv& getenv_fn, const Warn& warn, const std::vector<std::string>& env_names);
// The real environment (getenv and environ); only the runtime calls this.
Config load_config_from_env(const Warn& warn);

// The known setting closest to `name` by edit distance (case-insensitive,
// a transposition counts as one edit), or "" when none is close enough to be
// a plausible typo.
std::string closest_setting(std::string_view name);

// One line, "NAME=value NAME=value ...", for the effective-configuration log.
std::string describe(const Config& c);

// The default dump directory: nccl-inspector-<SLURM_JOB_ID> (SLURM_JOBID
// accepted too) or nccl-inspector-unknown-jobid, as the upstream Inspector.
std::string default_dump_dir(const GetEnv& getenv_fn);

// docs/configuration.md's table, generated from settings().
std::string settings_markdown();

}  // namespace ni
