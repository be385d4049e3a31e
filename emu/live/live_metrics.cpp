#include "emu/live/live_metrics.h"

#include <sstream>

#include "emu/report/request_latency.h"

namespace nvl::emu::live {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void line(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += " " + number(v) + "\n";
}

void header(std::string& out, const std::string& name, const std::string& type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

LiveMetrics::Histogram LiveMetrics::make(std::vector<double> bounds) {
  Histogram h;
  h.counts.assign(bounds.size(), 0);
  h.bounds = std::move(bounds);
  return h;
}

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

void LiveMetrics::record_done(const engine::RequestTiming& t) {
  std::lock_guard<std::mutex> lock(mu_);
  prefix_queries_ += static_cast<std::uint64_t>(t.prompt_tokens);
  prefix_hits_ += static_cast<std::uint64_t>(t.cached_tokens);
  if (!t.failure.empty()) {
    ++failed_;
    return;
  }
  ++completed_;
  prompt_tokens_ += static_cast<std::uint64_t>(t.prompt_tokens);
  generation_tokens_ += static_cast<std::uint64_t>(t.output_tokens);
  const RequestLatency l = request_latency(t, 1.0);
  if (l.ttft) ttft_s_.observe(*l.ttft);
  if (l.e2e) e2e_s_.observe(*l.e2e);
  if (l.tpot) tpot_s_.observe(*l.tpot);
}

void LiveMetrics::record_stopped(std::int64_t prompt_tokens, std::int64_t output_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stopped_;
  prompt_tokens_ += static_cast<std::uint64_t>(prompt_tokens);
  generation_tokens_ += static_cast<std::uint64_t>(output_tokens);
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
  return completed_;
}

std::uint64_t LiveMetrics::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

std::uint64_t LiveMetrics::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

void LiveMetrics::render(std::string& out, const std::string& name, const std::string& help, const Histogram& h,
                         const std::string& labels) {
  header(out, name, "histogram", help);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    line(out, name + "_bucket", labels + ",le=\"" + number(h.bounds[i]) + "\"", static_cast<double>(cumulative));
  }
  line(out, name + "_bucket", labels + ",le=\"+Inf\"", static_cast<double>(h.total));
  line(out, name + "_sum", labels, h.sum);
  line(out, name + "_count", labels, static_cast<double>(h.total));
}

std::string LiveMetrics::prometheus_text(const EngineGauges& g, const std::string& model_name) const {
  const std::string model = "model_name=\"" + model_name + "\"";
  std::string out;
  header(out, "vllm:num_requests_running", "gauge", "Requests holding KV on a normal rank.");
  line(out, "vllm:num_requests_running", model, static_cast<double>(g.running));
  header(out, "vllm:num_requests_waiting", "gauge", "Requests admitted but not yet running.");
  line(out, "vllm:num_requests_waiting", model, static_cast<double>(g.waiting));
  header(out, "vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage, 1 means 100 percent.");
  line(out, "vllm:gpu_cache_usage_perc", model, g.kv_usage);
  header(out, "nvl:healthy_ranks", "gauge", "Normal ranks serving: GPU healthy and in the group.");
  line(out, "nvl:healthy_ranks", model, static_cast<double>(g.healthy_ranks));
  header(out, "nvl:total_ranks", "gauge", "Normal ranks.");
  line(out, "nvl:total_ranks", model, static_cast<double>(g.total_ranks));
  header(out, "nvl72emu:emulation_lag_seconds", "gauge",
         "Emulated seconds the rack is behind the wall clock times the time scale (0: the host keeps up).");
  line(out, "nvl72emu:emulation_lag_seconds", model, g.emulation_lag_s);

  std::lock_guard<std::mutex> lock(mu_);
  header(out, "vllm:prompt_tokens_total", "counter", "Prompt tokens of finished requests.");
  line(out, "vllm:prompt_tokens_total", model, static_cast<double>(prompt_tokens_));
  header(out, "vllm:generation_tokens_total", "counter", "Output tokens of finished requests.");
  line(out, "vllm:generation_tokens_total", model, static_cast<double>(generation_tokens_));
  header(out, "vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.");
  line(out, "vllm:prefix_cache_queries_total", model, static_cast<double>(prefix_queries_));
  header(out, "vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.");
  line(out, "vllm:prefix_cache_hits_total", model, static_cast<double>(prefix_hits_));
  header(out, "vllm:request_success_total", "counter", "Requests that finished.");
  line(out, "vllm:request_success_total", model + ",finished_reason=\"length\"", static_cast<double>(completed_));
  line(out, "vllm:request_success_total", model + ",finished_reason=\"stop\"", static_cast<double>(stopped_));
  header(out, "nvl:request_failed_total", "counter", "Requests the engine failed (a fault).");
  line(out, "nvl:request_failed_total", model, static_cast<double>(failed_));
  header(out, "nvl:request_cancelled_total", "counter", "Requests cancelled by their client.");
  line(out, "nvl:request_cancelled_total", model, static_cast<double>(cancelled_));
  header(out, "nvl:request_rejected_total", "counter", "Requests refused before reaching the engine, by status.");
  for (const auto& [status, n] : rejected_) {
    line(out, "nvl:request_rejected_total", model + ",status=\"" + std::to_string(status) + "\"", static_cast<double>(n));
  }
  header(out, "nvl:faults_injected_total", "counter", "Faults injected through the admin interface.");
  line(out, "nvl:faults_injected_total", model, static_cast<double>(faults_));
  render(out, "vllm:time_to_first_token_seconds", "Time to first token (emulated seconds).", ttft_s_, model);
  render(out, "vllm:time_per_output_token_seconds", "Time per output token after the first (emulated seconds).",
         tpot_s_, model);
  render(out, "vllm:e2e_request_latency_seconds", "Arrival to last token (emulated seconds).", e2e_s_, model);
  return out;
}

}  // namespace nvl::emu::live
