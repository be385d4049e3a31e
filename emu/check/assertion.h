#pragma once
// A scenario assertion (an SLO): a report.json figure, named by its dotted path, within bounds.
#include <optional>
#include <string>

namespace nvl::emu {

struct Assertion {
  std::string metric;  // "latency_ms.ttft.p90", "requests.failed", "throughput.output_tokens_per_s"
  std::optional<double> max;
  std::optional<double> min;
};

}  // namespace nvl::emu
