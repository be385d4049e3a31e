#pragma once
// Collects the benchmark samples of a run from the serving system's callbacks: when each request was sent,
// when its tokens arrived (for the inter-token latencies) and how it ended. Warm-up requests are counted
// and otherwise left out. Only the requests in flight keep per-request state.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "emu/report/benchmark_metrics.h"
#include "engine/system/request_timing.h"

namespace nvl::emu {

class BenchmarkRecorder {
 public:
  void on_submit(engine::RequestId id, rt::Time sent, bool warmup);
  // `count` tokens of request `id` delivered at `now`.
  void on_tokens(engine::RequestId id, std::int64_t count, rt::Time now);
  void on_done(const engine::RequestTiming& t, rt::Time now);

  const std::vector<BenchmarkSample>& samples() const { return samples_; }
  const ItlCounts& itl_ms() const { return itl_ms_; }
  std::uint64_t warmup_requests() const { return warmup_; }

 private:
  struct Open {
    rt::Time sent;
    std::optional<rt::Time> last_delivery;
    std::vector<ItlCounts::Count> itl_ms;  // gaps, each with how many tokens waited it
  };
  std::unordered_map<engine::RequestId, Open> open_;
  std::vector<BenchmarkSample> samples_;
  ItlCounts itl_ms_;  // of the completed requests
  std::uint64_t warmup_ = 0;
};

}  // namespace nvl::emu
