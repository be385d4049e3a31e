#pragma once
// The run's fault timeline (report.json `faults`): for each fault, when it hit, when the serving system
// noticed it and how, when it recovered and how, and the requests it moved. Detection and recovery
// come from the event log (the health monitor's declarations, ranks removed and back); faults the
// engine has nothing to notice (a slow link, a throttled GPU) show only their hit and their end.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/faults/fault_plan.h"
#include "emu/rt/time.h"

namespace nvl::emu {

struct FaultEntry {
  FaultKind kind = FaultKind::gpu_lost;
  std::string target;
  std::int64_t gpu = -1;  // GPU faults: the GPU (= the normal rank for normal GPUs)
  bool random = false;
  rt::Time hit;
  std::optional<rt::Time> detected, recovered;
  std::string detected_by;  // health_check, operation_error, or what reported it
  std::string recovery;     // what recovered it
  std::int64_t requests_affected = 0;
  nlohmann::json detail = nlohmann::json::object();
};

class FaultTimeline {
 public:
  // A fault hit now; returns its index.
  std::size_t hit(rt::Time t, FaultKind kind, const FaultTarget& target, bool random);
  void detected(std::size_t i, rt::Time t, std::string by);
  void recovered(std::size_t i, rt::Time t, std::string how);
  FaultEntry& at(std::size_t i) { return entries_.at(i); }
  // Matches the health monitor's and the normal group's records to the GPU faults they answer.
  void on_record(rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields);

  const std::vector<FaultEntry>& entries() const { return entries_; }
  nlohmann::json to_json() const;

 private:
  // The latest fault of these kinds on `gpu` not yet detected (or, `detected`, detected but not recovered).
  FaultEntry* open(std::int64_t gpu, std::initializer_list<FaultKind> kinds, bool detected);

  std::vector<FaultEntry> entries_;
};

}  // namespace nvl::emu
