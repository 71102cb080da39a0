// The table of output formats. A new format: one file that defines its
// make_* function, and one line in each list below. Order matters: outputs
// end their cycle in this order (the log first, so the Prometheus file counts
// what the log's flush wrote).
#include "src/output/output.h"

namespace ni::out {

std::unique_ptr<Output> make_log_output(const OutputEnv& env);   // log_output.cpp
std::unique_ptr<Output> make_prom_output(const OutputEnv& env);  // prom_output.cpp

namespace {
constexpr Format kFormats[] = {
    {kLogFormat, &Config::json_dump, make_log_output},
    {kPromFormat, &Config::prom_dump, make_prom_output},
};
}  // namespace

std::span<const Format> formats() { return kFormats; }

}  // namespace ni::out
