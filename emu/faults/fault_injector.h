#pragma once
// Applies a scenario's fault plan to a run: each fault is scheduled on the runtime and, when it hits,
// applied to the fake hardware (GPU Xids and throttling, fabric links, NICs and partitions) or, for the
// faults of processes and memory that no fake models (a worker crash, a router restart, lost Grace KV
// blocks), through the serving system's fault entry points. Each hit is logged ("faults", "injected")
// and opens an entry in the fault timeline; faults with a duration are undone when it ends.
#include <cstdint>

#include "emu/cluster/emulated_cluster.h"
#include "emu/faults/fault_plan.h"
#include "emu/faults/fault_timeline.h"
#include "emu/rt/runtime.h"
#include "engine/system/pd_system.h"

namespace nvl::emu {

class FaultInjector {
 public:
  // Random faults are drawn now, from the run seed's "faults" stream, up to `run_end`.
  FaultInjector(rt::Runtime& rt, const FaultPlan& plan, rt::Time run_end, EmulatedCluster& cluster,
                engine::PdSystem& system);

  // Every event-log record, for detection and recovery times.
  void on_record(rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields) {
    timeline_.on_record(t, source, kind, fields);
  }
  const FaultTimeline& timeline() const { return timeline_; }
  std::size_t scheduled() const { return scheduled_; }

 private:
  void schedule(const ScheduledFault& f, bool random);
  void apply(const ScheduledFault& f, bool random);
  // Undoes a fault after its duration, marking it recovered.
  void undo_after(const ScheduledFault& f, std::size_t entry, std::function<void()> undo, const std::string& how);
  const std::string& element_name(int element) const;

  rt::Runtime& rt_;
  EmulatedCluster& cluster_;
  engine::PdSystem& system_;
  FaultTimeline timeline_;
  std::size_t scheduled_ = 0;
};

}  // namespace nvl::emu
