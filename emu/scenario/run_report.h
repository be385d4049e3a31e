#pragma once
// The figures of one scenario run, as the terminal summary and report.json (schema kReportSchemaVersion).
#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace nvl::emu {

inline constexpr int kReportSchemaVersion = 1;

struct LatencySummaryMs {
  std::uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

struct RunReport {
  std::string scenario;
  std::uint64_t seed = 0;
  std::string event_log_hash;
  std::string stop_reason;  // quiescent or time_limit
  double sim_time_s = 0;
  double wall_time_s = 0;
  std::uint64_t peak_rss_bytes = 0;
  std::uint64_t requests_total = 0;  // submitted
  std::uint64_t requests_completed = 0;
  std::uint64_t requests_failed = 0;
  std::uint64_t requests_in_flight = 0;  // still running when the time limit stopped the run
  std::map<std::string, std::uint64_t> failed_by_reason;
  LatencySummaryMs ttft, tpot, e2e;
  std::uint64_t input_tokens = 0;   // prompts of completed requests
  std::uint64_t output_tokens = 0;  // delivered to completed requests
  std::map<std::string, std::uint64_t> routing;  // path -> requests
  std::uint64_t kv_transfer_bytes = 0;

  double speedup() const { return wall_time_s > 0 ? sim_time_s / wall_time_s : 0; }
  double input_tokens_per_s() const { return sim_time_s > 0 ? static_cast<double>(input_tokens) / sim_time_s : 0; }
  double output_tokens_per_s() const { return sim_time_s > 0 ? static_cast<double>(output_tokens) / sim_time_s : 0; }
};

nlohmann::json to_json(const RunReport& r);
void print_summary(std::ostream& os, const RunReport& r);

}  // namespace nvl::emu
