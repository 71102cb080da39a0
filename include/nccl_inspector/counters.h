// The plugin's counters: one table from which every list of them is built.
//
// The capture threads' per-thread counters (src/core/ring.h ThreadCounters),
// the core's totals (src/core/runtime.h CoreStats) and their summation
// (ni::stats()), the output's snapshot (src/output/encoder.h StatsSnapshot),
// the `stats` / `end` log records (docs/log-format.md) and the Prometheus file
// all come from NI_COUNTERS below. Adding a counter is one row here, plus the
// place that bumps it.
//
// Columns of X(id, key, group, origin, kind, prom_name, prom_help):
//  id        the C++ member name in ThreadCounters / CoreStats / StatsSnapshot
//  key       its JSON key in the stats record (inside its group's object)
//  group     kTop (a top-level field) or the object it sits in (kDropped,
//            kFiltered, kFaults); rows of one group are contiguous, and the
//            row order is the field order of the stats record
//  origin    who keeps it: kThreadSum (every capture thread bumps its own;
//            the total is the sum), kThreadMax (per thread; the total is the
//            max), kCore (computed by ni::stats() from the rings and pools),
//            kOutput (kept by the dump thread)
//  kind      kCounter (only grows) or kGauge (a level or a high-water mark)
//  prom_*    the Prometheus family it is exported in ("": not exported). Rows
//            of one group share one family, labelled reason="<key>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

// clang-format off
#define NI_COUNTERS(X)                                                                                         \
  X(records_written,        "records_written", kTop,      kOutput,    kCounter,                                  \
    "nccl_inspector_records_written_total", "Op records drained from the rings and written out.")               \
  X(ops_completed,          "ops_completed",   kTop,      kCore,      kCounter, "", "")                          \
  X(records_pending,        "records_pending", kTop,      kCore,      kGauge,   "", "")                          \
  X(dropped_ring_full,      "ring_full",       kDropped,  kThreadSum, kCounter,                                  \
    "nccl_inspector_dropped_records_total", "Op records lost, by reason.")                                      \
  X(dropped_pool_exhausted, "pool_exhausted",  kDropped,  kThreadSum, kCounter,                                  \
    "nccl_inspector_dropped_records_total", "Op records lost, by reason.")                                      \
  X(dropped_write_error,    "write_error",     kDropped,  kOutput,    kCounter,                                  \
    "nccl_inspector_dropped_records_total", "Op records lost, by reason.")                                      \
  X(dropped_at_exit,        "at_exit",         kDropped,  kOutput,    kCounter,                                  \
    "nccl_inspector_dropped_records_total", "Op records lost, by reason.")                                      \
  X(filtered_min_size,      "min_size",        kFiltered, kThreadSum, kCounter, "", "")                          \
  X(sampled_out,            "sampled_out",     kFiltered, kThreadSum, kCounter, "", "")                          \
  X(fault_null_handle,      "null_handle",     kFaults,   kThreadSum, kCounter, "", "")                          \
  X(fault_stale_handle,     "stale_handle",    kFaults,   kThreadSum, kCounter, "", "")                          \
  X(fault_foreign_pid,      "foreign_pid",     kFaults,   kThreadSum, kCounter, "", "")                          \
  X(fault_double_stop,      "double_stop",     kFaults,   kThreadSum, kCounter, "", "")                          \
  X(fault_late_child,       "late_child",      kFaults,   kThreadSum, kCounter, "", "")                          \
  X(fault_unknown_event,    "unknown_event",   kFaults,   kThreadSum, kCounter, "", "")                          \
  X(fault_bad_channel,      "bad_channel",     kFaults,   kThreadSum, kCounter, "", "")                          \
  X(fault_null_context,     "null_context",    kFaults,   kThreadSum, kCounter, "", "")                          \
  X(ring_high_water,        "ring_high_water", kTop,      kThreadMax, kGauge,   "", "")                          \
  X(rings,                  "rings",           kTop,      kCore,      kGauge,   "", "")                          \
  X(pool_in_use,            "pool_in_use",     kTop,      kCore,      kGauge,   "", "")                          \
  X(pool_high_water,        "pool_high_water", kTop,      kCore,      kGauge,   "", "")                          \
  X(reclaimed,              "reclaimed_ops",   kTop,      kThreadSum, kCounter, "", "")
// clang-format on

// ---- selecting rows by origin inside an X macro: NI_COUNTER_IF_<what>(origin, text...)
// expands to text when the row's origin matches, to nothing otherwise.
#define NI_COUNTER_IF_THREAD_SUM(origin, ...) NI_COUNTER_IF_THREAD_SUM_##origin(__VA_ARGS__)
#define NI_COUNTER_IF_THREAD_SUM_kThreadSum(...) __VA_ARGS__
#define NI_COUNTER_IF_THREAD_SUM_kThreadMax(...)
#define NI_COUNTER_IF_THREAD_SUM_kCore(...)
#define NI_COUNTER_IF_THREAD_SUM_kOutput(...)

#define NI_COUNTER_IF_THREAD_MAX(origin, ...) NI_COUNTER_IF_THREAD_MAX_##origin(__VA_ARGS__)
#define NI_COUNTER_IF_THREAD_MAX_kThreadSum(...)
#define NI_COUNTER_IF_THREAD_MAX_kThreadMax(...) __VA_ARGS__
#define NI_COUNTER_IF_THREAD_MAX_kCore(...)
#define NI_COUNTER_IF_THREAD_MAX_kOutput(...)

// Kept per capture thread (either way of totalling).
#define NI_COUNTER_IF_THREAD(origin, ...) NI_COUNTER_IF_THREAD_##origin(__VA_ARGS__)
#define NI_COUNTER_IF_THREAD_kThreadSum(...) __VA_ARGS__
#define NI_COUNTER_IF_THREAD_kThreadMax(...) __VA_ARGS__
#define NI_COUNTER_IF_THREAD_kCore(...)
#define NI_COUNTER_IF_THREAD_kOutput(...)

// Part of the core's totals (CoreStats): everything but the output's own.
#define NI_COUNTER_IF_CORE(origin, ...) NI_COUNTER_IF_CORE_##origin(__VA_ARGS__)
#define NI_COUNTER_IF_CORE_kThreadSum(...) __VA_ARGS__
#define NI_COUNTER_IF_CORE_kThreadMax(...) __VA_ARGS__
#define NI_COUNTER_IF_CORE_kCore(...) __VA_ARGS__
#define NI_COUNTER_IF_CORE_kOutput(...)

#define NI_COUNTER_IF_OUTPUT(origin, ...) NI_COUNTER_IF_OUTPUT_##origin(__VA_ARGS__)
#define NI_COUNTER_IF_OUTPUT_kThreadSum(...)
#define NI_COUNTER_IF_OUTPUT_kThreadMax(...)
#define NI_COUNTER_IF_OUTPUT_kCore(...)
#define NI_COUNTER_IF_OUTPUT_kOutput(...) __VA_ARGS__

namespace ni::counters {

enum class Group : uint8_t { kTop, kDropped, kFiltered, kFaults };
enum class Origin : uint8_t { kThreadSum, kThreadMax, kCore, kOutput };
enum class Kind : uint8_t { kCounter, kGauge };

// The JSON key of a group's object in the stats record ("" for kTop).
constexpr std::string_view group_key(Group g) {
  switch (g) {
    case Group::kDropped: return "dropped";
    case Group::kFiltered: return "filtered";
    case Group::kFaults: return "faults";
    case Group::kTop: break;
  }
  return "";
}

struct Counter {
  std::string_view id;
  std::string_view key;
  Group group;
  Origin origin;
  Kind kind;
  std::string_view prom_name;
  std::string_view prom_help;
};

// One entry per row, in row order.
inline constexpr Counter kCounters[] = {
#define NI_COUNTER_ROW(id, key, group, origin, kind, prom_name, prom_help) \
  {#id, key, Group::group, Origin::origin, Kind::kind, prom_name, prom_help},
    NI_COUNTERS(NI_COUNTER_ROW)
#undef NI_COUNTER_ROW
};
inline constexpr size_t kCount = sizeof(kCounters) / sizeof(kCounters[0]);

// A row by name, for the places that name one counter (schema.h's keys).
enum class Id : uint8_t {
#define NI_COUNTER_ID(id, ...) id,
  NI_COUNTERS(NI_COUNTER_ID)
#undef NI_COUNTER_ID
};
constexpr const Counter& row(Id id) { return kCounters[static_cast<size_t>(id)]; }
constexpr std::string_view key(Id id) { return row(id).key; }

// The table's own rules, checked at compile time: a group's rows are
// contiguous (the stats record opens each object once), and rows exported
// in one Prometheus family are contiguous and agree on its help text.
constexpr bool table_is_consistent() {
  for (size_t i = 0; i < kCount; ++i) {
    for (size_t j = i + 2; j < kCount; ++j) {
      const Counter &a = kCounters[i], &b = kCounters[j];
      for (size_t k = i + 1; k < j; ++k) {
        if (a.group != Group::kTop && a.group == b.group && kCounters[k].group != a.group) return false;
        if (!a.prom_name.empty() && a.prom_name == b.prom_name && kCounters[k].prom_name != a.prom_name) return false;
      }
    }
    for (size_t j = i + 1; j < kCount; ++j)
      if (!kCounters[i].prom_name.empty() && kCounters[i].prom_name == kCounters[j].prom_name &&
          kCounters[i].prom_help != kCounters[j].prom_help)
        return false;
  }
  return true;
}
static_assert(table_is_consistent(), "NI_COUNTERS: split group or Prometheus family");

}  // namespace ni::counters
