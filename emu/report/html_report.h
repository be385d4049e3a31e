#pragma once
// report.html: one self-contained page (inline SVG, no scripts or network) with the run's headline
// figures, checks, fault timeline, and plots: TTFT and TPOT CDFs, throughput and queue length over
// time, per-GPU utilisation, link utilisation and KV hit rates by tier; the plots over time mark the
// faults' hits.
#include <iosfwd>

#include "emu/report/run_report.h"

namespace nvl::emu {

void write_html_report(std::ostream& out, const RunReport& r);

}  // namespace nvl::emu
