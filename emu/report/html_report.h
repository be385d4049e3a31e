#pragma once
// report.html: one self-contained page (inline SVG, no scripts or network) with the run's headline
// figures, checks, fault timeline, and plots: TTFT and TPOT CDFs, throughput and queue length over
// time, each pool's queue, batch and KV occupancy and the TTFT split over time, per-GPU utilisation,
// link utilisation and KV hit rates by tier; the plots over time mark the faults' hits.
#include <iosfwd>

#include "emu/report/run_comparison.h"
#include "emu/report/run_report.h"

namespace nvl::emu {

struct HtmlOptions {
  // The plots over time as a trailing moving average over this many simulated seconds (whole timeline
  // samples, at least one); 0: every sample as it is. report.json's series stay raw.
  double smoothing_s = 0;
  // Another run to set beside this one: a table of both runs' headline figures with the change of each,
  // and its line on every plot over time. Null: this run alone.
  const OtherRun* compare = nullptr;
};

void write_html_report(std::ostream& out, const RunReport& r, const HtmlOptions& options = {});

}  // namespace nvl::emu
