#include "emu/report/request_latency.h"

namespace nvl::emu {

RequestLatency request_latency(const engine::RequestTiming& t, double units_per_s) {
  RequestLatency l;
  if (t.first_token) l.ttft = (*t.first_token - t.arrival).seconds() * units_per_s;
  if (t.finished) l.e2e = (*t.finished - t.arrival).seconds() * units_per_s;
  if (t.first_token && t.finished && t.output_tokens > 1) {
    // Scaled before the division: the order report.json's figures have always been computed in.
    l.tpot = (*t.finished - *t.first_token).seconds() * units_per_s / static_cast<double>(t.output_tokens - 1);
  }
  return l;
}

}  // namespace nvl::emu
