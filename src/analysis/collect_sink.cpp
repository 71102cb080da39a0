// CollectSink (see collect_sink.h).
#include "src/analysis/collect_sink.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace ni::analysis {

void CollectSink::on_op(const Op& op, const OpDetail* d, const FileInfo&) {
  ops.push_back(op);
  if (detail_) extra.push_back(extra_of(d));
}

CollectSink::Extra CollectSink::extra_of(const OpDetail* d) {
  Extra e;
  if (d) {
    e.hcas = d->hcas;
    slowest_of(*d, e);
  }
  return e;
}

void CollectSink::slowest_of(const OpDetail& d, Extra& e) {
  if (d.ch_times.size() >= 2) {  // verbose: every channel's time
    // The durations in a buffer kept between calls (this runs once per op).
    thread_local std::vector<double> durs;
    durs.clear();
    double mx = -1;
    for (const auto& c : d.ch_times) {
      durs.push_back(c.dur_us);
      if (c.dur_us > mx) {
        mx = c.dur_us;
        e.slowest_channel = c.channel;
      }
    }
    // The median as the plugin writes it in ch_slow: the middle one, or the
    // mean of the two middle ones.
    const std::size_t n = durs.size();
    std::nth_element(durs.begin(), durs.begin() + static_cast<std::ptrdiff_t>(n / 2), durs.end());
    double med = durs[n / 2];
    if (n % 2 == 0) med = (med + *std::max_element(durs.begin(), durs.begin() + static_cast<std::ptrdiff_t>(n / 2))) / 2;
    e.slowest_us = static_cast<float>(mx);
    e.median_us = static_cast<float>(med);
  } else if (d.slow_ch >= 0) {  // ch_slow
    e.slowest_channel = d.slow_ch;
    e.slowest_us = static_cast<float>(d.slow_us);
    e.median_us = static_cast<float>(d.median_us);
  }
  if (e.slowest_channel >= 0) e.slowest_ratio = e.median_us > 0 ? e.slowest_us / e.median_us : 0;
}

void CollectSink::merge(CollectSink&& o) {
  ops.insert(ops.end(), o.ops.begin(), o.ops.end());
  extra.insert(extra.end(), std::make_move_iterator(o.extra.begin()), std::make_move_iterator(o.extra.end()));
  o.ops.clear();
  o.extra.clear();
}

}  // namespace ni::analysis
