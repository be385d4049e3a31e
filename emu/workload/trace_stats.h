#pragma once
// Statistics of a workload, replayed in arrival order through an unbounded prefix cache keyed on the
// block hashes (so what is cached follows from the hashes alone). Two views of the cache:
//  - "prefix": holds every prompt's blocks (the "ideal prefix hit" the trace READMEs quote);
//  - "decoded": also holds the blocks each answer filled, as an engine that keeps decoded KV does (SGLang's
//    radix cache, vLLM's prefix cache). An answer's blocks are known only through the session's next
//    prompt: when that prompt continues the previous one, its blocks up to the end of the previous prompt
//    plus answer count as cached.
// Figures are a flat map ("decoded.computed.p50", "calls_per_session.p90", ...) so that a profile's
// published targets can name them.
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "emu/workload/workload.h"

namespace nvl::emu {

struct TraceStatsOptions {
  // Computed-token thresholds for "share of prefill-needing requests under": the design notes' median
  // (357) and the default short/long prefill threshold of the router (2,048, DESIGN.md).
  std::vector<std::int64_t> prefill_thresholds_tokens{357, 2048};
  // Turn phases for growth per turn (first turn of each), as REFERENCE.md §4 reports them.
  std::vector<std::int64_t> phase_first_turns{2, 6, 13};
};

class TraceStats {
 public:
  static TraceStats compute(const Workload& w, const TraceStatsOptions& options = {});

  const std::map<std::string, double>& figures() const { return figures_; }
  // Throws std::out_of_range naming the figure when the workload has none of that kind.
  double figure(const std::string& name) const;
  void print(std::ostream& os) const;
  nlohmann::json to_json() const;

 private:
  std::string source_;
  std::map<std::string, double> figures_;
};

}  // namespace nvl::emu
