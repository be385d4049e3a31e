#pragma once
// What live mode counts, per engine as vLLM counts it, and its Prometheus text under the names of
// vLLM's V1 engine (vllm/v1/metrics/loggers.py: model_name and engine labels, the same buckets), so
// that dashboards, autoscalers and routers built for vLLM read it unchanged. An engine is a DP rank of
// a decoding instance (vLLM's engine index of a DP deployment), numbered from 0, then a prefill
// instance (numbered after the DP ranks), which counts the prefill halves of P/D pairs sent to it.
// Figures of the server itself (requests refused before reaching an engine, faults injected,
// emulation lag) are `nvl72emu:` metrics.
// Thread-safe: the runtime thread records, HTTP threads render.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace nvl::emu::live {

// One engine at one moment (vLLM's scheduler stats), read on the runtime thread.
struct RankGauges {
  std::int64_t running = 0;
  std::int64_t waiting = 0;      // queued on the rank, or waiting for their KV from a prefill worker
  double kv_usage = 0;           // 0..1: KV blocks in use over the rank's GPU blocks
  std::uint64_t preemptions = 0;  // since the rank's worker started
  std::int64_t gpu_blocks = 0;
  bool healthy = true;  // its GPUs healthy and its group stepping it
  bool prefill = false;  // a prefill instance's engine
  std::uint64_t prompts_prefilled = 0;  // a prefill instance's: prompts it prefilled, for any decode rank
};

// The rack at one moment.
struct EngineGauges {
  std::vector<RankGauges> engines;  // by engine: the DP ranks, then the prefill instances
  std::int64_t running = 0;       // over every DP rank
  std::int64_t waiting = 0;       // over every rank, and in the router's queue
  std::int64_t router_queue = 0;  // admitted, not yet routed to a rank
  double kv_usage = 0;            // every rank's blocks in use over all their blocks
  std::int64_t healthy_ranks = 0;
  std::int64_t total_ranks = 0;
  double emulation_lag_s = 0;  // LiveEngine::emulation_lag_s
};

// How a request ended, as vLLM's FinishReason names it.
enum class FinishReason { stop, length, abort, error };

// A request that ended on an engine, its intervals in emulated seconds as vLLM defines them: queue
// (arrival to scheduled; here: to routed to its rank), prefill (scheduled to first token), decode
// (first token to last), inference (scheduled to last token), e2e (arrival to its end).
struct FinishedRequest {
  std::int32_t engine = 0;
  FinishReason reason = FinishReason::length;
  double e2e_s = 0, queue_s = 0, prefill_s = 0, decode_s = 0, inference_s = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t max_tokens = 0;
};

struct MetricsShape {
  std::int32_t engines = 1;
  std::int64_t max_model_len = 1;  // the token histograms' buckets go up to it, as vLLM's do
  std::int64_t block_tokens = 1;
};

class LiveMetrics {
 public:
  explicit LiveMetrics(MetricsShape shape);

  // A request's first `count` tokens on `engine`, `ttft_s` after it arrived: its prompt is counted
  // (and its cached part) as vLLM counts them when the prefill completes.
  void record_first_token(std::int32_t engine, double ttft_s, std::int64_t prompt_tokens, std::int64_t cached_tokens,
                          std::int64_t count);
  // Tokens after the first (one engine step's output): one inter-token latency, as vLLM observes it
  // per step and request.
  void record_tokens(std::int32_t engine, std::int64_t count, double itl_s);
  void record_finished(const FinishedRequest& r);
  // A request that failed before a router placed it on an engine.
  void record_failed_unrouted();
  // A client gave up on its request (a disconnect, a gRPC cancel): the server's view, counted at once;
  // the engine counts it as finished_reason "abort" once it has stopped it.
  void record_cancelled();
  // An HTTP status or gRPC refusal given to a request that never reached the engine.
  void record_rejected(int status);
  void record_fault();
  // Every engine's figures and the server's; `only_engine` >= 0: that engine's alone (its own endpoint).
  std::string prometheus_text(const EngineGauges& g, const std::string& model_name, std::int32_t only_engine = -1) const;

  // For the serve command's summary: requests that finished (at their length or a stop sequence) and
  // failed, over every engine; requests cancelled by their clients.
  std::uint64_t completed() const;
  std::uint64_t failed() const;
  std::uint64_t cancelled() const;

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<std::uint64_t> counts;  // per bound, not cumulative; +Inf is the total
    std::uint64_t total = 0;
    double sum = 0;
    explicit Histogram(std::vector<double> b);
    void observe(double v);
  };
  // One engine's counters and histograms, vLLM's buckets.
  struct EngineStats {
    explicit EngineStats(std::int64_t max_model_len);
    Histogram ttft_s;
    Histogram itl_s;
    Histogram request_tpot_s;
    Histogram e2e_s, queue_s, prefill_s, decode_s, inference_s;
    Histogram prompt_tokens, generation_tokens, max_tokens;
    std::uint64_t prompt_tokens_total = 0;
    std::uint64_t generation_tokens_total = 0;
    std::uint64_t prefix_queries = 0;  // prompt tokens looked up in the prefix cache
    std::uint64_t prefix_hits = 0;     // of those, found cached
    std::array<std::uint64_t, 4> finished{};  // by FinishReason
  };
  EngineStats& engine(std::int32_t e);

  MetricsShape shape_;
  mutable std::mutex mu_;
  std::vector<EngineStats> engines_;
  std::uint64_t failed_unrouted_ = 0;
  std::uint64_t cancelled_ = 0;
  std::uint64_t faults_ = 0;
  std::map<int, std::uint64_t> rejected_;  // by status
};

}  // namespace nvl::emu::live
