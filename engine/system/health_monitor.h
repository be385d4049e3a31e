#pragma once
// Notices dead normal ranks and a dead prefill worker, the two ways a serving system does: a periodic
// health check of every member (armed only while there is work, so an idle run can end) and the
// operation errors its steps report. Either way the member is declared after the detection delay (a
// deployment option: how long the real checks take to conclude), and only if it is still unhealthy then.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/device.h"

namespace nvl::engine {

// A prefill instance's event-log fields: instances after the first are named (the first names none,
// as the only instance of a deployment does).
inline nlohmann::json prefill_record(nlohmann::json fields, std::size_t instance) {
  if (instance > 0) fields["instance"] = instance;
  return fields;
}

struct HealthConfig {
  rt::Duration check_interval = rt::sec(1);    // deployment.health_check_interval_s
  rt::Duration detection_delay = rt::ms(100);      // deployment.fault_detection_delay_s
  rt::Duration gpu_reset_time = rt::sec(10);   // deployment.gpu_reset_s: drain and reset after Xid 48
  rt::Duration worker_restart_time = rt::sec(30);  // deployment.worker_restart_s: a crashed worker back
};

// A GPU's health as the Xid its driver reports, in words ("GPU 3 lost (Xid 79)"; empty: healthy).
std::string xid_text(hal::DeviceHealth health, hal::DeviceId gpu);

class HealthMonitor {
 public:
  // The members that stand for prefill instances: -1 for the first, -2 for the second, ... (the DP
  // ranks are 0 .. ranks - 1).
  static constexpr std::int32_t kPrefillWorker = -1;
  static constexpr std::int32_t prefill_member(std::int32_t instance) { return -1 - instance; }
  static constexpr std::int32_t prefill_instance_of(std::int32_t member) { return -1 - member; }
  // What is wrong with a member now (nullopt: healthy, or no longer watched).
  using Probe = std::function<std::optional<std::string>(std::int32_t member)>;
  // The member is declared dead: `why` from the probe, `how` it was noticed ("health_check", "operation_error").
  using Declare = std::function<void(std::int32_t member, const std::string& why, const std::string& how)>;

  // Watches DP ranks 0 .. ranks - 1 and `prefill_workers` prefill instances (prefill_member(i)).
  // `busy` says whether there is work: the periodic check re-arms itself only while it holds.
  HealthMonitor(rt::Runtime& rt, HealthConfig cfg, std::int32_t ranks, Probe probe, Declare declare,
                std::function<bool()> busy, std::int32_t prefill_workers = 0);

  const HealthConfig& config() const { return cfg_; }
  // A step failed on the member: declared after the detection delay if the probe still finds it unhealthy.
  void operation_error(std::int32_t member);
  // Arms the periodic check unless it is armed (new work arrived, or a fault may need noticing).
  void watch();
  // The work is done: the pending check is dropped (watch() arms it again).
  void pause() { next_check_.cancel(); }
  // A declared member is healthy again and watched anew.
  void back(std::int32_t member);
  std::uint64_t checks() const { return checks_; }

 private:
  enum class State : std::uint8_t { watched, suspected, declared };
  void check();
  void suspect(std::int32_t member, const std::string& how);
  State& state_of(std::int32_t member);
  // The event-log record of `what` ("suspected", "cleared", "declared_dead") happening to the member.
  void record(std::int32_t member, const std::string& what, nlohmann::json fields);

  rt::Runtime& rt_;
  HealthConfig cfg_;
  Probe probe_;
  Declare declare_;
  std::vector<State> state_;  // the DP ranks, then the prefill instances
  std::int32_t ranks_ = 0;
  std::function<bool()> busy_;
  rt::TimerHandle next_check_;
  std::uint64_t checks_ = 0;
};

}  // namespace nvl::engine
