#include "emu/live/live_metrics.h"

#include <stdexcept>

#include "emu/live/prometheus_text.h"

namespace nvl::emu::live {

namespace {

// vLLM's buckets (vllm/v1/metrics/loggers.py).
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTokenIntervalBuckets = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,  0.4, 0.5,
                                                   0.75, 1.0,   2.5,  5.0,   7.5,  10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestLatencyBuckets = {0.3,  0.5,  0.8,  1.0,   1.5,   2.0,   2.5,
                                                    5.0,  10.0, 15.0, 20.0,  30.0,  40.0,  50.0,
                                                    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

constexpr std::array<const char*, 4> kReasonNames = {"stop", "length", "abort", "error"};

}  // namespace

LiveMetrics::Histogram::Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size(), 0) {}

void LiveMetrics::Histogram::observe(double v) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (v <= bounds[i]) {
      ++counts[i];
      break;
    }
  }
  ++total;
  sum += v;
}

LiveMetrics::EngineStats::EngineStats(std::int64_t max_model_len)
    : ttft_s(kTtftBuckets),
      itl_s(kTokenIntervalBuckets),
      request_tpot_s(kTokenIntervalBuckets),
      e2e_s(kRequestLatencyBuckets),
      queue_s(kRequestLatencyBuckets),
      prefill_s(kRequestLatencyBuckets),
      decode_s(kRequestLatencyBuckets),
      inference_s(kRequestLatencyBuckets),
      prompt_tokens(one_two_five_buckets(max_model_len)),
      generation_tokens(one_two_five_buckets(max_model_len)),
      max_tokens(one_two_five_buckets(max_model_len)) {}

LiveMetrics::LiveMetrics(MetricsShape shape) : shape_(shape) {
  engines_.reserve(static_cast<std::size_t>(shape.engines));
  for (std::int32_t e = 0; e < shape.engines; ++e) engines_.emplace_back(shape.max_model_len);
}

LiveMetrics::EngineStats& LiveMetrics::engine(std::int32_t e) {
  if (e < 0 || e >= shape_.engines) throw std::out_of_range("live metrics: no engine " + std::to_string(e));
  return engines_[static_cast<std::size_t>(e)];
}

void LiveMetrics::record_first_token(std::int32_t e, double ttft_s, std::int64_t prompt_tokens,
                                     std::int64_t cached_tokens, std::int64_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats& s = engine(e);
  s.ttft_s.observe(ttft_s);
  s.prompt_tokens_total += static_cast<std::uint64_t>(prompt_tokens);
  s.prefix_queries += static_cast<std::uint64_t>(prompt_tokens);
  s.prefix_hits += static_cast<std::uint64_t>(cached_tokens);
  s.generation_tokens_total += static_cast<std::uint64_t>(count);
}

void LiveMetrics::record_tokens(std::int32_t e, std::int64_t count, double itl_s) {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats& s = engine(e);
  s.itl_s.observe(itl_s);
  s.generation_tokens_total += static_cast<std::uint64_t>(count);
}

void LiveMetrics::record_finished(const FinishedRequest& r) {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats& s = engine(r.engine);
  ++s.finished[static_cast<std::size_t>(r.reason)];
  s.e2e_s.observe(r.e2e_s);
  s.queue_s.observe(r.queue_s);
  s.prefill_s.observe(r.prefill_s);
  s.decode_s.observe(r.decode_s);
  s.inference_s.observe(r.inference_s);
  s.prompt_tokens.observe(static_cast<double>(r.prompt_tokens));
  s.generation_tokens.observe(static_cast<double>(r.output_tokens));
  s.max_tokens.observe(static_cast<double>(r.max_tokens));
  // vLLM's mean time per output token: the decode time over the tokens after the first (0 with one).
  s.request_tpot_s.observe(r.output_tokens > 1 ? r.decode_s / static_cast<double>(r.output_tokens - 1) : 0.0);
}

void LiveMetrics::record_failed_unrouted() {
  std::lock_guard<std::mutex> lock(mu_);
  ++failed_unrouted_;
}

void LiveMetrics::record_cancelled() {
  std::lock_guard<std::mutex> lock(mu_);
  ++cancelled_;
}

void LiveMetrics::record_rejected(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_[status];
}

void LiveMetrics::record_fault() {
  std::lock_guard<std::mutex> lock(mu_);
  ++faults_;
}

std::uint64_t LiveMetrics::completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t n = 0;
  for (const EngineStats& s : engines_) {
    n += s.finished[static_cast<std::size_t>(FinishReason::stop)] + s.finished[static_cast<std::size_t>(FinishReason::length)];
  }
  return n;
}

std::uint64_t LiveMetrics::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t n = failed_unrouted_;
  for (const EngineStats& s : engines_) n += s.finished[static_cast<std::size_t>(FinishReason::error)];
  return n;
}

std::uint64_t LiveMetrics::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

std::string LiveMetrics::prometheus_text(const EngineGauges& g, const std::string& model_name,
                                         std::int32_t only_engine) const {
  PrometheusText out;
  const PromLabels model = {{"model_name", model_name}};
  std::vector<PromLabels> engine_labels;
  for (std::int32_t e = 0; e < shape_.engines; ++e) {
    engine_labels.push_back({{"model_name", model_name}, {"engine", std::to_string(e)}});
  }
  const auto shown = [&](std::size_t e) { return only_engine < 0 || static_cast<std::size_t>(only_engine) == e; };
  // A gauge read from the ranks: one sample per engine the gauges cover.
  const auto per_rank = [&](const char* name, const char* type, const char* help, auto value) {
    out.family(name, type, help);
    for (std::size_t e = 0; e < g.engines.size() && e < engine_labels.size(); ++e) {
      if (shown(e)) out.sample(name, engine_labels[e], value(g.engines[e]));
    }
  };
  per_rank("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
           [](const RankGauges& r) { return r.running; });
  per_rank("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           [](const RankGauges& r) { return r.waiting; });
  per_rank("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
           [](const RankGauges& r) { return r.kv_usage; });
  per_rank("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
           [](const RankGauges& r) { return r.preemptions; });
  out.family("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  for (std::size_t e = 0; e < g.engines.size() && e < engine_labels.size(); ++e) {
    if (!shown(e)) continue;
    out.sample("vllm:cache_config_info",
               {{"block_size", std::to_string(shape_.block_tokens)},
                {"enable_prefix_caching", "True"},
                {"engine", std::to_string(e)},
                {"num_gpu_blocks", std::to_string(g.engines[e].gpu_blocks)}},
               1.0);
  }
  per_rank("nvl72emu:engine_healthy", "gauge", "1 while the engine's GPUs are healthy and its group steps it.",
           [](const RankGauges& r) { return static_cast<std::int64_t>(r.healthy ? 1 : 0); });
  out.family("nvl72emu:prefill_prompts_total", "counter",
             "Prompts a prefill instance prefilled, for P/D pairs sent to it and for the server's own router.");
  for (std::size_t e = 0; e < g.engines.size() && e < engine_labels.size(); ++e) {
    if (shown(e) && g.engines[e].prefill) {
      out.sample("nvl72emu:prefill_prompts_total", engine_labels[e], g.engines[e].prompts_prefilled);
    }
  }

  std::lock_guard<std::mutex> lock(mu_);
  const auto counter = [&](const char* name, const char* help, std::uint64_t EngineStats::*field) {
    out.family(name, "counter", help);
    for (std::size_t e = 0; e < engines_.size(); ++e) {
      if (shown(e)) out.sample(name, engine_labels[e], engines_[e].*field);
    }
  };
  counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
          &EngineStats::prefix_queries);
  counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
          &EngineStats::prefix_hits);
  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", &EngineStats::prompt_tokens_total);
  counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
          &EngineStats::generation_tokens_total);
  out.family("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  for (std::size_t e = 0; e < engines_.size(); ++e) {
    if (!shown(e)) continue;
    for (std::size_t reason = 0; reason < kReasonNames.size(); ++reason) {
      PromLabels l = engine_labels[e];
      l.emplace_back("finished_reason", kReasonNames[reason]);
      out.sample("vllm:request_success_total", l, engines_[e].finished[reason]);
    }
  }
  const auto histogram = [&](const char* name, const char* help, Histogram EngineStats::*field) {
    out.family(name, "histogram", help);
    for (std::size_t e = 0; e < engines_.size(); ++e) {
      if (!shown(e)) continue;
      const Histogram& h = engines_[e].*field;
      out.histogram(name, engine_labels[e], h.bounds, h.counts, h.total, h.sum);
    }
  };
  histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", &EngineStats::prompt_tokens);
  histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
            &EngineStats::generation_tokens);
  histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
            &EngineStats::max_tokens);
  histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            &EngineStats::ttft_s);
  histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", &EngineStats::itl_s);
  histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.",
            &EngineStats::request_tpot_s);
  histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &EngineStats::e2e_s);
  histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
            &EngineStats::queue_s);
  histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.",
            &EngineStats::inference_s);
  histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
            &EngineStats::prefill_s);
  histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
            &EngineStats::decode_s);

  out.family("nvl72emu:emulation_lag_seconds", "gauge",
             "Emulated seconds the rack is behind the wall clock times the time scale (0: the host keeps up).");
  out.sample("nvl72emu:emulation_lag_seconds", model, g.emulation_lag_s);
  if (only_engine >= 0) return out.text();
  out.family("nvl72emu:router_queue_requests", "gauge", "Requests admitted and not yet routed to an engine.");
  out.sample("nvl72emu:router_queue_requests", model, g.router_queue);
  out.family("nvl72emu:healthy_engines", "gauge", "DP ranks serving: GPUs healthy and in their group.");
  out.sample("nvl72emu:healthy_engines", model, g.healthy_ranks);
  out.family("nvl72emu:engines", "gauge", "DP ranks of the decoding instances (the prefill instances' engines are not counted).");
  out.sample("nvl72emu:engines", model, g.total_ranks);
  out.family("nvl72emu:request_failed_unrouted_total", "counter",
             "Requests that failed before the router placed them on an engine.");
  out.sample("nvl72emu:request_failed_unrouted_total", model, failed_unrouted_);
  out.family("nvl72emu:request_cancelled_total", "counter", "Requests whose clients gave up on them.");
  out.sample("nvl72emu:request_cancelled_total", model, cancelled_);
  out.family("nvl72emu:request_rejected_total", "counter", "Requests refused before reaching the engine, by status.");
  for (const auto& [status, n] : rejected_) {
    out.sample("nvl72emu:request_rejected_total", {{"model_name", model_name}, {"status", std::to_string(status)}}, n);
  }
  out.family("nvl72emu:faults_injected_total", "counter", "Faults injected through the admin interface.");
  out.sample("nvl72emu:faults_injected_total", model, faults_);
  return out.text();
}

}  // namespace nvl::emu::live
