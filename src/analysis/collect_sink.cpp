// CollectSink (see collect_sink.h).
#include "src/analysis/collect_sink.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace ni::analysis {

void CollectSink::on_op(const Op& op, const OpDetail* d, const FileInfo&) {
  ops.push_back(op);
  if (!detail_) return;
  Extra e;
  if (d) {
    e.hcas = d->hcas;
    if (d->ch_times.size() >= 2) {
      std::vector<double> durs;
      double mx = -1;
      for (const auto& c : d->ch_times) {
        durs.push_back(c.dur_us);
        if (c.dur_us > mx) {
          mx = c.dur_us;
          e.slowest_channel = c.channel;
        }
      }
      std::nth_element(durs.begin(), durs.begin() + static_cast<std::ptrdiff_t>(durs.size() / 2), durs.end());
      const double med = durs[durs.size() / 2];
      e.slowest_ratio = med > 0 ? mx / med : 0;
    }
  }
  extra.push_back(std::move(e));
}

void CollectSink::merge(CollectSink&& o) {
  ops.insert(ops.end(), o.ops.begin(), o.ops.end());
  extra.insert(extra.end(), std::make_move_iterator(o.extra.begin()), std::make_move_iterator(o.extra.end()));
  o.ops.clear();
  o.extra.clear();
}

}  // namespace ni::analysis
