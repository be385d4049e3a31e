#include "emu/report/run_report.h"

#include <algorithm>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/report/timeline_json.h"

namespace nvl::emu {

namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double kPercent = 100.0;

nlohmann::json latency_json(const LatencySummaryMs& l) {
  return {{"count", l.count}, {"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}};
}

void latency_row(std::ostream& os, const char* name, const LatencySummaryMs& l) {
  os << "  " << std::left << std::setw(6) << name << std::right << std::fixed << std::setprecision(2) << std::setw(12)
     << l.mean << std::setw(12) << l.p50 << std::setw(12) << l.p90 << std::setw(12) << l.p99 << '\n';
}

// With some time from measured tables: which kinds the roofline priced, the largest first, each as a share
// of all kernel time (those under 0.1% left out): where a table is missing.
std::string roofline_kinds(const RunReport& r) {
  const RunReport::KernelTime all = r.kernel_time();
  if (all.measured_gpu_s <= 0) return {};
  std::vector<std::pair<double, std::string>> kinds;
  for (const auto& [kind, t] : r.kernel_time_by_kind) {
    const double share = (t.gpu_s - t.measured_gpu_s) / all.gpu_s;
    if (share >= 0.001) kinds.emplace_back(share, kind);
  }
  std::sort(kinds.begin(), kinds.end(), std::greater<>());
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    os << (i == 0 ? " (" : ", ") << kinds[i].second << ' ' << kPercent * kinds[i].first << '%';
  }
  if (!kinds.empty()) os << ')';
  return os.str();
}

}  // namespace

RunReport::KernelTime RunReport::kernel_time() const {
  KernelTime all;
  for (const auto& [kind, t] : kernel_time_by_kind) {
    all.gpu_s += t.gpu_s;
    all.measured_gpu_s += t.measured_gpu_s;
  }
  return all;
}

double RunReport::measured_kernel_share() const {
  const KernelTime all = kernel_time();
  return all.gpu_s > 0 ? all.measured_gpu_s / all.gpu_s : 0;
}

bool RunReport::checks_pass() const {
  return std::all_of(checks.begin(), checks.end(), [](const NamedCheck& c) { return c.result.pass; });
}

nlohmann::json to_json(const RunReport& r) {
  nlohmann::json j;
  j["schema_version"] = kReportSchemaVersion;
  j["scenario"] = r.scenario;
  j["seed"] = r.seed;
  j["event_log_hash"] = r.event_log_hash;
  j["stop_reason"] = r.stop_reason;
  j["sim_time_s"] = r.sim_time_s;
  j["wall_time_s"] = r.wall_time_s;
  j["speedup"] = r.speedup();
  j["gpus"] = r.gpus;
  j["gpu_seconds_per_wall_second"] = r.gpu_seconds_per_wall_second();
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  j["requests"] = {{"total", r.requests_total},
                   {"completed", r.requests_completed},
                   {"failed", r.requests_failed},
                   {"in_flight", r.requests_in_flight},
                   {"failed_by_reason", r.failed_by_reason}};
  j["latency_ms"] = {{"ttft", latency_json(r.ttft)}, {"tpot", latency_json(r.tpot)}, {"e2e", latency_json(r.e2e)}};
  const double gpus = r.gpus > 0 ? static_cast<double>(r.gpus) : 1.0;
  j["throughput"] = {{"input_tokens_per_s", r.input_tokens_per_s()},
                     {"output_tokens_per_s", r.output_tokens_per_s()},
                     {"per_gpu",
                      {{"input_tokens_per_s", r.input_tokens_per_s() / gpus},
                       {"output_tokens_per_s", r.output_tokens_per_s() / gpus}}}};
  j["routing"] = r.routing;
  j["routing"]["dp_imbalance"] = r.dp_imbalance;
  j["kv"] = {{"hit_rate_gpu", r.kv_hits.rate(r.kv_hits.gpu_tokens)},
             {"hit_rate_grace", r.kv_hits.rate(r.kv_hits.grace_tokens)},
             {"hit_rate_remote", r.kv_hits.rate(r.kv_hits.remote_tokens)},
             {"lookup_tokens", r.kv_hits.lookup_tokens},
             {"grace_hit_tokens", r.kv_hits.grace_tokens},
             {"grace_load_bytes", r.kv_hits.grace_load_bytes},
             {"grace_offload_bytes", r.kv_hits.grace_offload_bytes},
             {"gpu_evicted_tokens", r.kv_hits.gpu_evicted_tokens},
             {"prefill_evicted_tokens", r.kv_hits.prefill_evicted_tokens},
             {"transfer_bytes", r.kv_transfer_bytes}};
  nlohmann::json links = nlohmann::json::object();
  for (const auto& [cls, u] : r.links) {
    links[cls] = {{"bytes", u.bytes},
                  {"mean_utilisation", u.mean},
                  {"peak_utilisation", u.peak},
                  {"peak_channel_utilisation", u.peak_channel}};
  }
  j["links"] = links;
  nlohmann::json by_kind = nlohmann::json::object();
  for (const auto& [kind, t] : r.kernel_time_by_kind) {
    by_kind[kind] = {{"gpu_s", t.gpu_s}, {"measured_gpu_s", t.measured_gpu_s}};
  }
  const RunReport::KernelTime kernel_time = r.kernel_time();
  j["kernels"] = {{"library", r.kernel_library},
                  {"gpu_s", kernel_time.gpu_s},
                  {"measured_gpu_s", kernel_time.measured_gpu_s},
                  {"measured_share", r.measured_kernel_share()},
                  {"by_kind", by_kind}};
  nlohmann::json checks = nlohmann::json::object();
  for (const auto& c : r.checks) checks[c.name] = {{"status", c.result.status()}, {"pass", c.result.pass}, {"detail", c.result.detail}};
  j["checks"] = checks;
  j["faults"] = r.faults;
  j["pools"] = r.pools;
  j["benchmark"] = to_json(r.benchmark);
  j["timeline"] = to_json(r.timeline);
  if (r.trace) {
    const TraceSummary s = r.trace->summary();
    // Observing stops at the window's end: what the window left out is reported as simulated time.
    const double traced_s = std::max(0.0, std::min(r.sim_time_s, s.window_end_s) - s.window_start_s);
    j["trace"] = {{"events", s.events},
                  {"traced_sim_s", traced_s},
                  {"untraced_sim_s", r.sim_time_s - traced_s},
                  {"dropped_outside_window", s.outside_window},
                  {"dropped_over_cap", s.over_cap},
                  {"window_start_s", s.window_start_s},
                  {"window_end_s", s.window_end_s}};
  } else {
    j["trace"] = nullptr;
  }
  return j;
}

void print_summary(std::ostream& os, const RunReport& r) {
  os << "scenario " << r.scenario << "  seed " << r.seed << "  event-log hash " << r.event_log_hash << '\n';
  os << std::fixed << std::setprecision(3) << "sim " << r.sim_time_s << " s (" << r.stop_reason << ")  wall "
     << r.wall_time_s << " s  speedup " << std::setprecision(1) << r.speedup() << "x  "
     << r.gpu_seconds_per_wall_second() << " GPU-s per wall-s  peak RSS "
     << std::setprecision(0) << static_cast<double>(r.peak_rss_bytes) / kBytesPerMiB << " MiB\n";
  os << "requests: " << r.requests_total << " total, " << r.requests_completed << " completed, " << r.requests_failed
     << " failed, " << r.requests_in_flight << " in flight\n";
  for (const auto& [reason, n] : r.failed_by_reason) os << "  failed (" << reason << "): " << n << '\n';
  os << "latency (ms)" << std::setw(8) << "mean" << std::setw(12) << "p50" << std::setw(12) << "p90" << std::setw(12)
     << "p99" << '\n';
  latency_row(os, "TTFT", r.ttft);
  latency_row(os, "TPOT", r.tpot);
  latency_row(os, "E2E", r.e2e);
  os << std::setprecision(1) << "throughput: " << r.input_tokens_per_s() << " input tok/s, " << r.output_tokens_per_s()
     << " output tok/s\n";
  const BenchmarkMetrics& b = r.benchmark;
  if (b.completed > 0) {
    os << std::setprecision(2) << "benchmark: " << b.completed << " requests";
    if (b.warmup_requests > 0) os << " (after " << b.warmup_requests << " warm-up)";
    os << " in " << b.duration_s << " s: TTFT mean " << b.ttft_ms.mean << " ms, TPOT mean " << b.tpot_ms.mean
       << " ms, ITL p99 " << b.itl_ms.p99 << " ms; " << b.request_throughput_per_s << " req/s, "
       << std::setprecision(1) << b.output_tokens_per_s << " output tok/s (" << b.output_tokens_per_s_per_gpu
       << " per GPU, " << b.output_tokens_per_s_per_user << " per user)\n";
  }
  os << "routing:";
  for (const auto& [path, n] : r.routing) os << ' ' << path << '=' << n;
  if (r.dp_imbalance > 0) {
    os << "; DP imbalance (max / mean running per rank) " << std::setprecision(2) << r.dp_imbalance << std::setprecision(1);
  }
  os << "\nKV: hit rate GPU " << kPercent * r.kv_hits.rate(r.kv_hits.gpu_tokens) << "%, Grace "
     << kPercent * r.kv_hits.rate(r.kv_hits.grace_tokens) << "%, remote "
     << kPercent * r.kv_hits.rate(r.kv_hits.remote_tokens) << "%; transferred " << r.kv_transfer_bytes
     << " bytes; Grace over C2C: loaded " << r.kv_hits.grace_load_bytes << " bytes, offloaded "
     << r.kv_hits.grace_offload_bytes << " bytes\n";
  os << "kernels: " << r.kernel_library << ", " << kPercent * r.measured_kernel_share()
     << "% of GPU kernel time priced from measured tables, the rest from the roofline" << roofline_kinds(r) << '\n';
  os << "links (mean / peak utilisation):";
  for (const auto& [cls, u] : r.links) os << ' ' << cls << ' ' << kPercent * u.mean << "% / " << kPercent * u.peak << '%';
  os << "\nchecks:";
  for (const auto& c : r.checks) os << ' ' << c.name << '=' << c.result.status();
  os << '\n';
  for (const auto& c : r.checks) {
    if (!c.result.pass) os << "  FAILED " << c.name << ": " << c.result.detail << '\n';
    if (c.result.skipped) os << "  skipped " << c.name << ": " << c.result.detail << '\n';
  }
}

}  // namespace nvl::emu
