// The Prometheus textfile as an Output: every drained record goes into the
// PromWriter's histograms; the file is rewritten every prom_interval_us (and
// on dump-now and at stop) with the counters as they are after the log's flush.
#include <time.h>

#include <memory>

#include "src/output/output.h"
#include "src/output/prom.h"

namespace ni::out {
namespace {

class PromOutput final : public Output {
 public:
  explicit PromOutput(const OutputEnv& env)
      : period_ns_(static_cast<uint64_t>(env.cfg.prom_interval_us) * 1000),
        prom_(env.io, env.cfg.prom_dir.empty() ? env.cfg.dump_dir : env.cfg.prom_dir,
              PromIdentity{env.meta.job.job_id, env.meta.host, env.meta.pid, env.meta.plugin_version,
                           env.meta.job.global_rank, env.cfg.prom_extra_labels},
              env.log) {}

  uint64_t stats_period_ns() const override { return period_ns_; }
  void comm(const CommInfo& c, int64_t /*wall_ns*/) override { prom_.set_comm(c); }
  void record(const OpRecord& r, const CommInfo* comm, const ClockEstimate* /*clk*/) override { prom_.add(r, comm); }
  // A comm's end changes nothing: its series stay, so that counters keep their totals (PromWriter).
  void comm_end(const CommInfo& /*c*/, int64_t /*wall_ns*/) override {}
  Flushed end_cycle(const CycleEnd& c) override {
    if (c.stats_due) prom_.write(c.stats, wall_now_ns(), c.now_ns);
    return {};
  }
  std::string path() const override { return prom_.path(); }

 private:
  uint64_t period_ns_;
  PromWriter prom_;
};

}  // namespace

std::unique_ptr<Output> make_prom_output(const OutputEnv& env) { return std::make_unique<PromOutput>(env); }

}  // namespace ni::out
