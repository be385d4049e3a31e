#pragma once
// A scenario's `faults` (scenarios/README.md, "Faults"): faults at a time with a target, and random
// faults with a rate per hour over a list of targets, drawn from the run seed's "faults" stream.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace nvl::emu {

enum class FaultKind : std::uint8_t {
  gpu_lost,            // Xid 79: the GPU falls off the bus, for good
  gpu_ecc,             // Xid 48: uncorrectable ECC error; the GPU is drained and reset
  nvlink_error,        // Xid 74: some of the GPU's NVLink ports go down (or degrade)
  link_degrade,        // a link between two fabric elements runs at a share of its bandwidth
  link_flap,           // a link goes down and up again, `cycles` times
  nic_down,            // a NIC is down
  partition,           // two sets of hosts cannot reach each other over the scale-out network
  straggler,           // a GPU's clock drops to `factor` for a period (thermal throttling)
  grace_memory_error,  // a normal rank's Grace KV blocks are lost
  worker_crash,        // a worker process dies, a normal rank's or the prefill worker's (restarts after
                       // deployment.worker_restart_s)
  router_restart,      // the router restarts and rebuilds its prefix index
};

std::string_view to_string(FaultKind k);

// What a fault hits. GPU faults: a GPU index; links: two element names; nic_down: an element name;
// partition: two host sets.
struct FaultTarget {
  enum class Type : std::uint8_t { none, gpu, link, element, hosts };
  Type type = Type::none;
  std::int64_t gpu = -1;
  std::string a, b;  // link ends; element: a
  std::vector<std::int64_t> hosts_a, hosts_b;
  std::string text;  // as the timeline names it
};

struct FaultParams {
  double factor = 0.5;                // straggler: clock factor; link_degrade, nvlink_error (degrade): bandwidth share
  std::optional<double> duration_s;   // how long it lasts (unset: to the end of the run)
  double down_s = 1.0, up_s = 1.0;    // link_flap
  std::int64_t cycles = 3;            // link_flap
  std::int64_t links = 1;             // nvlink_error: ports affected
  bool degrade = false;               // nvlink_error: degrade instead of down
};

struct ScheduledFault {
  FaultKind kind = FaultKind::gpu_lost;
  double at_s = 0;
  FaultTarget target;
  FaultParams params;
};

struct RandomFault {
  FaultKind kind = FaultKind::gpu_lost;
  double rate_per_hour = 0;
  std::vector<FaultTarget> targets;  // each fault picks one, uniformly
  FaultParams params;
  double start_s = 0;
  std::optional<double> end_s;  // unset: the run's end
};

struct FaultPlan {
  std::vector<ScheduledFault> scheduled;
  std::vector<RandomFault> random;
  bool empty() const { return scheduled.empty() && random.empty(); }
};

// What targets are checked against: the deployment and the fabric's element names. The deployment as fault targets name it: "normal rank N" is the router's DP rank N (its first GPU),
// "prefill gpu N" the N-th GPU over every prefill instance.
struct FaultContext {
  std::vector<std::int64_t> rank_gpus;
  std::vector<std::int64_t> decoding_gpus;
  std::vector<std::int64_t> prefill_gpus;
  std::int64_t cluster_gpus = 0;
  std::string fabric_profile;
  std::int64_t units = 1;
};

// Reads the `faults` array; every problem is an rt::InputError naming `file` and the key
// ("faults[3].target").
FaultPlan read_fault_plan(const nlohmann::json& faults, const std::string& file, const FaultContext& ctx);

}  // namespace nvl::emu
