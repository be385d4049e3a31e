#pragma once
// The figures the serving benchmarks print (sglang.bench_serving, vllm bench serve, AIPerf), from the
// measured requests of a run. Definitions (scenarios/README.md, "benchmark"):
//   TTFT = first token - sent; E2E = last token - sent; TPOT = (E2E - TTFT) / (output - 1) over requests
//   with two or more output tokens; ITL = every gap between a request's token deliveries, a delivery of k
//   tokens counting as k gaps of a k-th of its wait each (sglang's native client), over all gaps of all
//   requests; duration = first send to the last request over; throughputs over that duration, of
//   completed requests; per GPU: over every GPU of the deployment; per user: the mean over requests of
//   (output - 1) / (E2E - TTFT), AIPerf's 1 / inter-token latency per request.
// Mean, median and percentiles as numpy computes them (linear interpolation between order statistics).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/report/itl_counts.h"
#include "emu/rt/time.h"

namespace nvl::emu {

// One measured request.
struct BenchmarkSample {
  rt::Time sent;
  rt::Time over;  // finished, or failed
  std::optional<rt::Time> first_token;
  std::optional<rt::Time> finished;  // unset: the request failed
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
};

struct Distribution {
  std::uint64_t count = 0;
  double mean = 0, median = 0, p90 = 0, p99 = 0;
};

struct BenchmarkMetrics {
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::uint64_t warmup_requests = 0;  // excluded from every figure
  std::int64_t concurrency = 0;       // the closed loop's; 0: open loop
  double duration_s = 0;
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
  double request_throughput_per_s = 0;
  double input_tokens_per_s = 0;
  double output_tokens_per_s = 0;
  double output_tokens_per_s_per_gpu = 0;
  double output_tokens_per_s_per_user = 0;
};

// numpy.percentile(values, p) with its default (linear) interpolation; p in [0, 100]. 0 without values.
double percentile(std::vector<double> values, double p);
Distribution distribution(const std::vector<double>& values);
// The same figures of values given with their counts (numpy's over the values repeated).
Distribution distribution(const ItlCounts& counts);

BenchmarkMetrics benchmark_metrics(std::span<const BenchmarkSample> samples, const ItlCounts& itl_ms, std::uint64_t gpus);
nlohmann::json to_json(const BenchmarkMetrics& m);

}  // namespace nvl::emu
