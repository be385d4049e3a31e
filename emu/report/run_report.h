#pragma once
// The figures of one scenario run: the terminal summary, report.json (schema kReportSchemaVersion,
// documented in scenarios/README.md) and what the HTML report and the trace are drawn from.
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/check/check_result.h"
#include "emu/report/benchmark_metrics.h"
#include "emu/report/timeline.h"
#include "emu/report/trace_recorder.h"

namespace nvl::emu {

inline constexpr int kReportSchemaVersion = 4;

struct LatencySummaryMs {
  std::uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  std::vector<double> quantiles;  // 0%, 1%, ..., 100% (for CDF plots); empty without samples
};

struct KvHits {
  std::uint64_t lookup_tokens = 0;  // prompt tokens the KV caches were asked to admit
  std::uint64_t gpu_tokens = 0;     // already in the rank's HBM (not counting prefixes fetched from a peer)
  std::uint64_t grace_tokens = 0;   // loaded from the rank's Grace memory
  std::uint64_t remote_tokens = 0;  // fetched from a peer (GPU over NVLink, or its Grace over RDMA)
  // KV the Grace tier moved over C2C (one copy of each rank's KV): loads to HBM, offloads to Grace.
  std::uint64_t grace_load_bytes = 0;
  std::uint64_t grace_offload_bytes = 0;
  // Cached tokens evicted to make room: the DP ranks' HBM caches (the Grace tier backs them) and the
  // prefill workers' (none backs them).
  std::uint64_t gpu_evicted_tokens = 0;
  std::uint64_t prefill_evicted_tokens = 0;
  double rate(std::uint64_t hits) const {
    return lookup_tokens > 0 ? static_cast<double>(hits) / static_cast<double>(lookup_tokens) : 0;
  }
};

struct LinkUse {
  double bytes = 0;         // wire bytes the class's channels carried, whole run
  double mean = 0;          // bytes carried over the class's capacity, whole run
  double peak = 0;          // busiest timeline interval of the class as a whole
  double peak_channel = 0;  // busiest single channel in any timeline interval
};

struct NamedCheck {
  std::string name;
  CheckResult result;
};

struct RunReport {
  std::string scenario;
  std::uint64_t seed = 0;
  std::string event_log_hash;
  std::string stop_reason;  // quiescent or time_limit
  double sim_time_s = 0;
  double wall_time_s = 0;
  std::uint64_t peak_rss_bytes = 0;
  std::uint64_t gpus = 0;
  std::uint64_t requests_total = 0;  // submitted
  std::uint64_t requests_completed = 0;
  std::uint64_t requests_failed = 0;
  std::uint64_t requests_in_flight = 0;  // still running when the time limit stopped the run
  std::map<std::string, std::uint64_t> failed_by_reason;
  LatencySummaryMs ttft, tpot, e2e;
  std::uint64_t input_tokens = 0;   // prompts of completed requests
  std::uint64_t output_tokens = 0;  // delivered to completed requests
  std::map<std::string, std::uint64_t> routing;  // path -> requests
  double dp_imbalance = 0;  // max over mean running requests per DP rank, mean over the samples (TimelineSampler)
  std::uint64_t kv_transfer_bytes = 0;
  KvHits kv_hits;
  std::map<std::string, LinkUse> links;  // by link class
  // How kernels were priced (cluster.kernel_library), and the GPU time launched: all of it, and the part
  // priced from measured tables (the rest from the roofline); both also by kernel kind (hal::KernelKind's
  // names, and graph_launch for the graph launches' own overhead). Each kernel alone at nominal clock.
  struct KernelTime {
    double gpu_s = 0;
    double measured_gpu_s = 0;
  };
  std::string kernel_library = "roofline";
  std::map<std::string, KernelTime> kernel_time_by_kind;
  KernelTime kernel_time() const;  // every kind's
  double measured_kernel_share() const;
  std::vector<NamedCheck> checks;
  Timeline timeline;
  nlohmann::json faults = nlohmann::json::array();  // the fault timeline (emu/faults/fault_timeline.h)
  // One entry per pool instance: {pool, role, instance, gpus, steps, and routed (decoding) or prefilled}.
  nlohmann::json pools = nlohmann::json::array();
  BenchmarkMetrics benchmark;  // the bench tools' figures over the measured requests
  std::shared_ptr<const TraceRecorder> trace;  // null when outputs.trace is off

  double speedup() const { return wall_time_s > 0 ? sim_time_s / wall_time_s : 0; }
  double gpu_seconds_per_wall_second() const { return speedup() * static_cast<double>(gpus); }
  double input_tokens_per_s() const { return sim_time_s > 0 ? static_cast<double>(input_tokens) / sim_time_s : 0; }
  double output_tokens_per_s() const { return sim_time_s > 0 ? static_cast<double>(output_tokens) / sim_time_s : 0; }
  bool checks_pass() const;
};

nlohmann::json to_json(const RunReport& r);
void print_summary(std::ostream& os, const RunReport& r);

}  // namespace nvl::emu
