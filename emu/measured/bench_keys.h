#pragma once
// The names the replay shares with the benchmark workload (issue 16, first half): the scenario keys a row's
// workload is written with and the report.json figures its emulated TTFT and TPOT are read from. They are
// here alone so that a change of those names is one edit.
#include <cstdint>
#include <string>

namespace nvl::emu::bench_keys {

// workload.source: "bench:isl=N,osl=M" (random prompts of exactly N tokens, M output tokens each).
inline std::string source(std::int64_t isl, std::int64_t osl) {
  return "bench:isl=" + std::to_string(isl) + ",osl=" + std::to_string(osl);
}
inline constexpr const char* kConcurrency = "concurrency";        // workload.concurrency: closed loop, requests in flight
inline constexpr const char* kRequests = "requests";              // workload.requests: measured, warm-up on top
inline constexpr const char* kWarmupRequests = "warmup_requests";  // workload.warmup_requests: not in the metrics

// report.json figures (JSON pointers): mean TTFT and mean TPOT (first token excluded), in milliseconds.
inline constexpr const char* kMeanTtftMs = "/benchmark/ttft_ms/mean";
inline constexpr const char* kMeanTpotMs = "/benchmark/tpot_ms/mean";

}  // namespace nvl::emu::bench_keys
