#pragma once
// A scenario file (scenarios/README.md lists every key, its type and default): the cluster, model,
// deployment, workload and run limits of one `nvl72emu run`.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "emu/check/assertion.h"
#include "emu/faults/fault_plan.h"

namespace nvl::emu {

struct ScenarioCluster {
  std::string gpu_profile = "gb300";
  std::string fabric_profile = "gb300-nvl72";
  std::int64_t units = 1;  // racks or nodes of the fabric profile
};

struct ScenarioModel {
  std::string profile = "glm-5";  // engine/models/<profile>.json
  std::string kv_dtype = "fp8";
};

// Expert placement over the normal group's EP ranks.
struct ScenarioEplb {
  std::int64_t redundant_experts = 0;
  double expert_skew = 0;            // Zipf skew of expert popularity (0: uniform)
  std::int64_t interval_steps = 0;   // rebalance every this many steps (0: never)
};

// The router's knobs (deployment.router): SGLang's cache-aware thresholds, the load score's weights,
// and how often the ranks report their load.
struct ScenarioRouter {
  double cache_threshold = 0.5;
  std::int64_t balance_abs_threshold = 32;
  double balance_rel_threshold = 1.0001;
  double weight_requests = 1.0;
  double weight_tokens_in_flight_per_1k = 0.0;
  double weight_free_kv_per_1k_blocks = 0.0;
  double load_report_interval_s = 0.01;
};

struct ScenarioDeployment {
  std::int64_t normal_gpus = 64;
  std::int64_t prefill_gpus = 8;  // 0: no prefill worker
  std::int64_t threshold_tokens = 2'048;
  std::string router_policy = "cache_aware";
  ScenarioRouter router;
  std::string kv_transfer_path = "rdma";  // P/D KV: rdma (CX8 NICs) or nvlink
  double kv_transfer_timeout_s = 5.0;     // a KV write slower than this is retried on the other path
  bool kv_pool = false;                   // the normal GPUs' KV is one pool over NVLink
  bool fetch_remote_prefix = true;        // fetch a prefix a peer holds when cheaper than recomputing
  std::string grace_tier = "off";  // off, write_through, write_back
  std::uint64_t grace_bytes_per_gpu = 0;
  std::int64_t token_budget = 8'192;  // tokens per step on a normal rank
  std::int64_t max_running = 256;     // requests holding KV on a normal rank
  std::int64_t kv_block_tokens = 64;  // tokens per paged KV block (prefix hashes are per block)
  std::int64_t chunk_tokens = 8'192;  // prefill tokens of one request per step on a normal rank
  std::int64_t mtp_draft_tokens = 0;  // MTP draft tokens per decode step (accepted at the model's rate)
  bool two_batch_overlap = false;
  bool prefill_expert_parallel = false;  // prefill worker as TP + EP instead of TP alone
  std::int64_t prefill_token_budget = 16'384;
  ScenarioEplb eplb;
  // Faults (emu/faults, engine/system/health_monitor.h): noticing dead ranks and bringing them back.
  double health_check_interval_s = 1.0;
  double fault_detection_delay_s = 0.1;
  double gpu_reset_s = 10.0;
  double worker_restart_s = 30.0;
};

struct ScenarioWorkload {
  std::string source;             // resolved: a path (absolute, or relative to the cwd) or gen:...
  std::int64_t max_sessions = 0;  // 0: every session of the source
  double rate_sessions_per_s = 1.0;
  std::string starts = "poisson";  // poisson, or recorded (the trace's session start times)
  double rate_scale = 1.0;         // recorded starts: > 1 compresses them (sessions start more often)
  double time_scale = 1.0;         // multiplies think times, recorded gaps and spawn delays
};

struct ScenarioRun {
  double max_sim_seconds = 3'600.0;
};

// What a run writes besides report.json (scenarios/README.md, "outputs").
struct ScenarioOutputs {
  bool trace = true;
  double trace_start_s = 0;
  double trace_window_s = 30;
  std::int64_t trace_max_events = 500'000;
  bool html = true;
  double timeline_interval_s = 1.0;
};

// Checks beyond the standard ones: a second run for determinism, and assertions (SLOs) on figures.
struct ScenarioChecks {
  bool determinism = false;
  std::vector<Assertion> assertions;
};

struct Scenario {
  std::string file;
  std::string name;
  std::uint64_t seed = 1;
  ScenarioCluster cluster;
  ScenarioModel model;
  ScenarioDeployment deployment;
  ScenarioWorkload workload;
  ScenarioRun run;
  ScenarioOutputs outputs;
  ScenarioChecks checks;
  FaultPlan faults;  // emu/faults/fault_plan.h
};

// Reads and checks a scenario file; `overrides` are "key.path=value" (value: JSON, else a string), applied
// before checking. Every problem is an rt::InputError naming the file and the key path.
Scenario load_scenario(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});

}  // namespace nvl::emu
