// The table of output formats. A new format is one file that defines its
// make_<name>_output() and one row below. Order matters: outputs end their
// cycle in this order (the log first, so the Prometheus file counts what the
// log's flush wrote).
#include "src/output/output.h"

// X(name, the Config flag that turns it on, the file's factory)
#define NI_OUTPUT_FORMATS(X)                                  \
  X(kLogFormat, json_dump, make_log_output)   /* log_output.cpp */ \
  X(kPromFormat, prom_dump, make_prom_output) /* prom_output.cpp */

namespace ni::out {

#define NI_DECLARE_FORMAT(name, flag, make) std::unique_ptr<Output> make(const OutputEnv& env);
NI_OUTPUT_FORMATS(NI_DECLARE_FORMAT)
#undef NI_DECLARE_FORMAT

namespace {
constexpr Format kFormats[] = {
#define NI_FORMAT_ROW(name, flag, make) {name, &Config::flag, make},
    NI_OUTPUT_FORMATS(NI_FORMAT_ROW)
#undef NI_FORMAT_ROW
};
}  // namespace

std::span<const Format> formats() { return kFormats; }

}  // namespace ni::out
