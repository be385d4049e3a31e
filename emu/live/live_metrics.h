#pragma once
// What live mode counts, and its Prometheus text form under vLLM's metric names (so dashboards built
// for vLLM read it unchanged). Thread-safe: the runtime thread records, HTTP threads render.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/system/request_timing.h"

namespace nvl::emu::live {

// The engine's state at one moment, read on the runtime thread.
struct EngineGauges {
  std::int64_t running = 0;
  std::int64_t waiting = 0;
  double kv_usage = 0;  // 0..1: GPU KV blocks held by requests over all normal ranks' blocks
  std::int64_t healthy_ranks = 0;
  std::int64_t total_ranks = 0;
  double emulation_lag_s = 0;  // LiveEngine::emulation_lag_s
};

class LiveMetrics {
 public:
  // Emulated (simulated) seconds: what the rack would have measured.
  void record_done(const engine::RequestTiming& t);
  void record_cancelled();
  // A request whose answer reached a stop sequence: finished, with the tokens it had produced.
  void record_stopped(std::int64_t prompt_tokens, std::int64_t output_tokens);
  // An HTTP status or gRPC refusal given to a request that never reached the engine.
  void record_rejected(int status);
  void record_fault();
  std::string prometheus_text(const EngineGauges& g, const std::string& model_name) const;

  std::uint64_t completed() const;
  std::uint64_t failed() const;
  std::uint64_t cancelled() const;

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<std::uint64_t> counts;  // per bound, not cumulative; +Inf is the total
    std::uint64_t total = 0;
    double sum = 0;
    void observe(double v);
  };
  static Histogram make(std::vector<double> bounds);
  static void render(std::string& out, const std::string& name, const std::string& help, const Histogram& h,
                     const std::string& labels);

  mutable std::mutex mu_;
  // vLLM's default buckets for these histograms.
  Histogram ttft_s_ = make({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0});
  Histogram tpot_s_ = make({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5});
  Histogram e2e_s_ = make({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0});
  std::uint64_t completed_ = 0;
  std::uint64_t failed_ = 0;
  std::uint64_t cancelled_ = 0;
  std::uint64_t stopped_ = 0;
  std::uint64_t faults_ = 0;
  std::uint64_t prompt_tokens_ = 0;
  std::uint64_t generation_tokens_ = 0;
  std::uint64_t prefix_queries_ = 0;  // prompt tokens looked up in the prefix cache
  std::uint64_t prefix_hits_ = 0;     // of those, found cached
  std::map<int, std::uint64_t> rejected_;  // by status
};

}  // namespace nvl::emu::live
