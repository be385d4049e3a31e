#pragma once
// One definition of a request's latencies for every figure the emulator reports (report.json and
// the terminal summary, live mode's Prometheus histograms): TTFT, TPOT and end-to-end.
#include <optional>

#include "engine/system/request_timing.h"

namespace nvl::emu {

struct RequestLatency {
  std::optional<double> ttft;  // arrival to the first token
  std::optional<double> tpot;  // first token to the last over the tokens after the first (two or more tokens)
  std::optional<double> e2e;   // arrival to the last token
};

// In `units_per_s` (1: seconds, 1e3: milliseconds); unset where the request did not get that far.
RequestLatency request_latency(const engine::RequestTiming& t, double units_per_s);

}  // namespace nvl::emu
