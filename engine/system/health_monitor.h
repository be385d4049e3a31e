#pragma once
// Notices dead normal ranks, the two ways a serving system does: a periodic health check of every rank
// (armed only while there is work, so an idle run can end) and the operation errors its steps report.
// Either way the rank is declared after the detection delay (a deployment option: how long the real
// checks take to conclude), and only if it is still unhealthy then.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/runtime.h"

namespace nvl::engine {

struct HealthConfig {
  rt::Duration check_interval = rt::sec(1);    // deployment.health_check_interval_s
  rt::Duration detection_delay = rt::ms(100);      // deployment.fault_detection_delay_s
  rt::Duration gpu_reset_time = rt::sec(10);   // deployment.gpu_reset_s: drain and reset after Xid 48
  rt::Duration worker_restart_time = rt::sec(30);  // deployment.worker_restart_s: a crashed worker back
};

class HealthMonitor {
 public:
  // What is wrong with a rank now (nullopt: healthy, or no longer watched).
  using Probe = std::function<std::optional<std::string>(std::int32_t rank)>;
  // The rank is declared dead: `why` from the probe, `how` it was noticed ("health_check", "operation_error").
  using Declare = std::function<void(std::int32_t rank, const std::string& why, const std::string& how)>;

  // `busy` says whether there is work: the periodic check re-arms itself only while it holds.
  HealthMonitor(rt::Runtime& rt, HealthConfig cfg, std::int32_t ranks, Probe probe, Declare declare,
                std::function<bool()> busy);

  const HealthConfig& config() const { return cfg_; }
  // A step failed on the rank: declared after the detection delay if the probe still finds it unhealthy.
  void operation_error(std::int32_t rank);
  // Arms the periodic check unless it is armed (new work arrived, or a fault may need noticing).
  void watch();
  // The work is done: the pending check is dropped (watch() arms it again).
  void pause() { next_check_.cancel(); }
  // A declared rank is healthy again and watched anew.
  void rank_back(std::int32_t rank);
  std::uint64_t checks() const { return checks_; }

 private:
  enum class State : std::uint8_t { watched, suspected, declared };
  void check();
  void suspect(std::int32_t rank, const std::string& how);

  rt::Runtime& rt_;
  HealthConfig cfg_;
  Probe probe_;
  Declare declare_;
  std::vector<State> state_;
  std::function<bool()> busy_;
  rt::TimerHandle next_check_;
  std::uint64_t checks_ = 0;
};

}  // namespace nvl::engine
