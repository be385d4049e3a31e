#pragma once
// The run's fault timeline (report.json `faults`): for each fault, when it hit, when the serving system
// noticed it and how, when it recovered and how, and the requests it moved. Detection and recovery
// come from the event log (the health monitor's declarations, ranks and the prefill worker removed and
// back); faults the engine has nothing to notice (a slow link, a throttled GPU) show only their hit and
// their end.
#include <cstdint>
#include <map>
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
  std::int64_t gpu = -1;               // GPU faults: the GPU
  std::int64_t rank = -1;              // the DP rank whose GPUs hold it (the router's numbering)
  std::int64_t prefill_instance = -1;  // or the prefill instance whose GPUs hold it
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
  // Which DP rank and which prefill instance each GPU serves: the records name ranks and instances,
  // the faults GPUs.
  FaultTimeline(std::map<std::int64_t, std::int64_t> rank_of_gpu = {}, std::map<std::int64_t, std::int64_t> prefill_of_gpu = {})
      : rank_of_gpu_(std::move(rank_of_gpu)), prefill_of_gpu_(std::move(prefill_of_gpu)) {}
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
  // The latest fault of these kinds on a GPU of DP rank `rank` not yet detected (or, `detected`,
  // detected but not recovered).
  FaultEntry* open(std::int64_t rank, std::initializer_list<FaultKind> kinds, bool detected);
  // The latest detected fault that takes a worker down (GPU lost, ECC, crash) on a GPU of DP rank `rank`,
  // or of prefill instance `prefill`, recovered or not: the one a request moved off that worker answers to.
  FaultEntry* declared(std::int64_t rank, std::int64_t prefill = -1);
  void on_prefill_record(rt::Time t, std::string_view kind, const nlohmann::json& fields);

  std::map<std::int64_t, std::int64_t> rank_of_gpu_;
  std::map<std::int64_t, std::int64_t> prefill_of_gpu_;
  std::vector<FaultEntry> entries_;
};

}  // namespace nvl::emu
