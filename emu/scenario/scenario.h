#pragma once
// A scenario file (scenarios/README.md lists every key, its type and default): the cluster, model,
// deployment, workload and run limits of one `nvl72emu run`.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "emu/check/assertion.h"
#include "emu/cluster/fabric_mode.h"
#include "emu/faults/fault_plan.h"

namespace nvl::emu {

struct ScenarioCluster {
  std::string gpu_profile = "gb300";
  std::string fabric_profile = "gb300-nvl72";
  std::int64_t units = 1;  // racks or nodes of the fabric profile
  // How kernels are priced: "roofline", or a kernel library whose measured tables the GPU profile names
  // (sglang, trtllm), falling back to the roofline where they have no data.
  std::string kernel_library = "roofline";
};

struct ScenarioModel {
  std::string profile = "glm-5";  // engine/models/<profile>.json
  std::string kv_dtype = "fp8";
};

// Expert placement over one instance's EP ranks.
struct ScenarioEplb {
  std::int64_t redundant_experts = 0;
  double expert_skew = 0;            // Zipf skew of expert popularity (0: uniform)
  double drift_interval_ms = 0;      // the popularity drifts every this long (0: never)
  double drift_fraction = 0.25;      // of the popularity order rotated by each drift
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

// Where a pool's GPUs are (deployment.pools[i].gpus).
struct ScenarioPlacement {
  enum class Kind : std::uint8_t { automatic, list, rack };
  Kind kind = Kind::automatic;
  std::vector<std::int64_t> gpus;  // list: the cluster's GPU indices, instance after instance
  std::int64_t rack = 0;           // rack: packed inside this rack (unit) of the cluster
};

// One worker pool (deployment.pools[i]): `instances` identical serving instances, each its own
// lockstep group of tp x dp x pp GPUs.
struct ScenarioPool {
  std::string name;
  std::string role;  // decode, prefill, mixed, aggregated
  std::int64_t instances = 1;
  std::int64_t tp = 1;  // attention tensor parallel inside one DP rank
  std::int64_t dp = 1;  // attention data-parallel ranks
  std::int64_t ep = 1;  // MoE expert parallel (1: MoE TP over the instance's GPUs)
  std::int64_t pp = 1;  // pipeline stages (prefill pools)
  ScenarioPlacement placement;
  std::string weights = "fp8";  // bf16, fp8, nvfp4
  std::string kv_dtype;         // the model's kv_dtype
  std::int64_t token_budget = 8'192;  // tokens per step on a DP rank (prefill pools: 16,384)
  std::int64_t max_running = 256;     // requests holding KV on a DP rank (prefill pools: 64)
  std::int64_t chunk_tokens = 8'192;  // prefill tokens of one request per step (prefill pools: token_budget)
  std::int64_t mtp_draft_tokens = 0;  // MTP draft tokens per decode step
  bool mixed_batches = true;  // decodes and prefill chunks share a step (false: SGLang's prefill-or-decode steps)
  std::optional<double> mtp_acceptance_rate;  // each draft's chance to be kept (unset: the model profile's)
  bool two_batch_overlap = false;
  bool single_batch_overlap = false;
  // EP at dp 1 (the experts spread over the TP group): false runs each GPU's experts on the tokens the
  // attention all-reduce left on every GPU, the MoE all-reduce summing the outputs, with no dispatch or
  // combine (TensorRT-LLM and vLLM without attention DP, SGLang without --moe-a2a-backend).
  bool moe_all_to_all = true;
  std::optional<std::int64_t> sbo_combine_sms;  // unset: the engine's default (32, SGLang's on Blackwell)
  ScenarioEplb eplb;
  double sm_partition_prefill = 0;  // mixed pools: SM share of the prefill stream (0: one batch, no partition)
  // Resolved when the scenario is read: each instance's GPU indices.
  std::vector<std::vector<std::int64_t>> instance_gpus;

  std::int64_t gpus_per_instance() const { return tp * dp * pp; }
  bool decodes() const { return role != "prefill"; }
};

struct ScenarioDeployment {
  std::vector<ScenarioPool> pools;
  std::int64_t threshold_tokens = 2'048;
  std::string router_policy = "cache_aware";
  ScenarioRouter router;
  std::string kv_transfer_path = "rdma";  // P/D KV: rdma (CX8 NICs) or nvlink
  double kv_transfer_timeout_s = 5.0;     // a KV write slower than this is retried on the other path
  bool kv_pool = false;                   // the decoding GPUs' KV is one pool over NVLink
  bool fetch_remote_prefix = true;        // fetch a prefix a peer holds when cheaper than recomputing
  std::string grace_tier = "off";  // off, write_through, write_back
  std::uint64_t grace_bytes_per_gpu = 0;
  std::int64_t kv_block_tokens = 64;  // tokens per paged KV block (prefix hashes are per block)
  // Faults (emu/faults, engine/system/health_monitor.h): noticing dead ranks and bringing them back.
  double health_check_interval_s = 1.0;
  double fault_detection_delay_s = 0.1;
  double gpu_reset_s = 10.0;
  double worker_restart_s = 30.0;

  // The GPUs the deployment uses: one past the highest placed index.
  std::int64_t cluster_gpus() const;
  // The decoding pools' DP ranks in the router's order (pool, instance, rank): each one's first GPU.
  std::vector<std::int64_t> rank_gpus() const;
  // Every GPU of the decoding pools, and of the prefill pools, in pool and instance order.
  std::vector<std::int64_t> decoding_gpus() const;
  std::vector<std::int64_t> prefill_gpus() const;
};

struct ScenarioWorkload {
  std::string source;             // resolved: a path (absolute, or relative to the cwd) or gen:...
  std::int64_t max_sessions = 0;  // 0: every session of the source
  double rate_sessions_per_s = 1.0;
  std::string starts = "poisson";  // poisson, or recorded (the trace's session start times)
  double rate_scale = 1.0;         // recorded starts: > 1 compresses them (sessions start more often)
  double time_scale = 1.0;         // multiplies think times, recorded gaps and spawn delays
  // workload.burst: the first `burst_sessions` top-level sessions start within [burst_at_s, + burst_within_s).
  std::int64_t burst_sessions = 0;
  double burst_at_s = 0;
  double burst_within_s = 0;
  // The bench tools' closed loop (scenarios/README.md, "Benchmark workloads"); 0: paced by `starts`.
  std::int64_t concurrency = 0;
  std::int64_t requests = 0;            // measured requests; 0: every session of the source
  std::int64_t warmup_requests = 0;     // sent first, counted in no benchmark figure
  std::int64_t trace_block_tokens = 0;  // Mooncake JSONL: tokens per hash_ids block; 0: the format's 512
};

struct ScenarioRun {
  double max_sim_seconds = 3'600.0;
  FabricMode fabric_mode = FabricMode::fast;
};

// What a run writes besides report.json (scenarios/README.md, "outputs").
struct ScenarioOutputs {
  bool trace = true;
  double trace_start_s = 0;
  double trace_window_s = 30;
  std::int64_t trace_max_events = 500'000;
  // "steps": a span per step graph, kernel launched alone and copy; "kernels": inside each step graph
  // too, a span per kernel, collective and fast-forwarded run of layers.
  std::string trace_detail = "steps";
  bool html = true;
  double html_smoothing_s = 0;  // report.html's series over time as a moving average over this long; 0: raw
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

// What fault targets of the scenario are checked against (its pools' GPUs and ranks, its fabric).
FaultContext fault_context(const Scenario& s);

// Reads and checks a scenario file; `overrides` are "key.path=value" (value: JSON, else a string), applied
// before checking. Every problem is an rt::InputError naming the file and the key path.
Scenario load_scenario(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});

}  // namespace nvl::emu
