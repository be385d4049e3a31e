#include "emu/scenario/run_report.h"

#include <iomanip>

#include <nlohmann/json.hpp>

namespace nvl::emu {

namespace {

nlohmann::json latency_json(const LatencySummaryMs& l) {
  return {{"count", l.count}, {"mean", l.mean}, {"p50", l.p50}, {"p90", l.p90}, {"p99", l.p99}};
}

void latency_row(std::ostream& os, const char* name, const LatencySummaryMs& l) {
  os << "  " << std::left << std::setw(6) << name << std::right << std::fixed << std::setprecision(2) << std::setw(12)
     << l.mean << std::setw(12) << l.p50 << std::setw(12) << l.p90 << std::setw(12) << l.p99 << '\n';
}

}  // namespace

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
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  j["requests"] = {{"total", r.requests_total},
                   {"completed", r.requests_completed},
                   {"failed", r.requests_failed},
                   {"in_flight", r.requests_in_flight},
                   {"failed_by_reason", r.failed_by_reason}};
  j["latency_ms"] = {{"ttft", latency_json(r.ttft)}, {"tpot", latency_json(r.tpot)}, {"e2e", latency_json(r.e2e)}};
  j["throughput"] = {{"input_tokens_per_s", r.input_tokens_per_s()}, {"output_tokens_per_s", r.output_tokens_per_s()}};
  j["routing"] = r.routing;
  j["kv"] = {{"transfer_bytes", r.kv_transfer_bytes}};
  return j;
}

void print_summary(std::ostream& os, const RunReport& r) {
  os << "scenario " << r.scenario << "  seed " << r.seed << "  event-log hash " << r.event_log_hash << '\n';
  os << std::fixed << std::setprecision(3) << "sim " << r.sim_time_s << " s (" << r.stop_reason << ")  wall "
     << r.wall_time_s << " s  speedup " << std::setprecision(1) << r.speedup() << "x  peak RSS "
     << r.peak_rss_bytes / (1024 * 1024) << " MiB\n";
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
  os << "routing:";
  for (const auto& [path, n] : r.routing) os << ' ' << path << '=' << n;
  os << "\nKV transferred: " << r.kv_transfer_bytes << " bytes\n";
}

}  // namespace nvl::emu
