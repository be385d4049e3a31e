#pragma once
// The run's fault timeline (report.json `faults`): for each fault, when it hit, when the serving system
// noticed it and how, when it recovered and how, and the requests it moved. Detection and recovery
// come from the event log (the health monitor's declarations, ranks and the prefill worker removed and
// back); faults the engine has nothing to notice (a slow link, a throttled GPU) show only their hit and
// their end.
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
  bool prefill = false;   // on a GPU of the prefill worker
  bool random = false;
  rt::Time hit;
  std::optional<rt::Time> detected, recovered;
  std::string detected_by;  // health_check, operation_error, or what reported it
  std::string recovery;     // what recovered it
  // Requests it moved: off the dead rank, redirected from it, or prefilled on their DP rank instead of
  // the dead prefill worker.
  std::int64_t requests_affected = 0;
  nlohmann::json detail = nlohmann::json::object();
};

class FaultTimeline {
 public:
  // The prefill worker's GPUs: its records name no GPU, faults on these answer to them.
  explicit FaultTimeline(std::vector<std::int64_t> prefill_gpus = {}) : prefill_gpus_(std::move(prefill_gpus)) {}
  // A fault hit now; returns its index.
  std::size_t hit(rt::Time t, FaultKind kind, const FaultTarget& target, bool random);
  void detected(std::size_t i, rt::Time t, std::string by);
  void recovered(std::size_t i, rt::Time t, std::string how);
  FaultEntry& at(std::size_t i) { return entries_.at(i); }
  // Matches the health monitor's, the normal group's and the P/D system's records to the GPU faults they
  // answer.
  void on_record(rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields);

  const std::vector<FaultEntry>& entries() const { return entries_; }
  nlohmann::json to_json() const;

 private:
  // The latest fault of these kinds on `gpu` not yet detected (or, `detected`, detected but not recovered).
  FaultEntry* open(std::int64_t gpu, std::initializer_list<FaultKind> kinds, bool detected);
  // The latest detected fault that takes a worker down (GPU lost, ECC, crash) on `gpu`, or on any GPU of
  // the prefill worker (gpu < 0), recovered or not: the one a request moved off that worker answers to.
  FaultEntry* declared(std::int64_t gpu);
  void on_prefill_record(rt::Time t, std::string_view kind, const nlohmann::json& fields);

  std::vector<std::int64_t> prefill_gpus_;
  std::vector<FaultEntry> entries_;
};

}  // namespace nvl::emu
