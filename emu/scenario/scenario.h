#pragma once
// A scenario file (scenarios/README.md lists every key, its type and default): the cluster, model,
// deployment, workload and run limits of one `nvl72emu run`.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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

struct ScenarioDeployment {
  std::int64_t normal_gpus = 64;
  std::int64_t prefill_gpus = 8;  // 0: no prefill worker
  std::int64_t threshold_tokens = 2'048;
  std::string router_policy = "cache_aware";
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
};

struct ScenarioWorkload {
  std::string source;             // resolved: a path (absolute, or relative to the cwd) or gen:...
  std::int64_t max_sessions = 0;  // 0: every session of the source
  double rate_sessions_per_s = 1.0;
};

struct ScenarioRun {
  double max_sim_seconds = 3'600.0;
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
};

// Reads and checks a scenario file; `overrides` are "key.path=value" (value: JSON, else a string), applied
// before checking. Every problem is an rt::InputError naming the file and the key path.
Scenario load_scenario(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});

}  // namespace nvl::emu
