#pragma once
// When the sessions of a workload start, and the cursors that time their requests.
// Top-level sessions start from the recorded timestamps (scaled) or a seeded Poisson process; sub-agent
// sessions start from their parent: the runner asks spawned_by() at the parent's start and after each of
// its completions.
#include <cstddef>
#include <vector>

#include "emu/rt/time.h"
#include "emu/workload/arrival_options.h"
#include "emu/workload/session_cursor.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

struct SessionStart {
  std::size_t session = 0;
  rt::Time at;
};

class ArrivalProcess {
 public:
  // Throws rt::InputError for bad options (non-positive rates or scales, recorded starts missing).
  ArrivalProcess(const Workload& workload, const ArrivalOptions& options);

  // Top-level sessions, sorted by start time.
  const std::vector<SessionStart>& starts() const { return starts_; }
  SessionCursor open(const SessionStart& start) const;
  // Sub-agents of `session` that start once it has completed `completed_requests` requests (0: at its
  // start), at `at` = that moment; their start times include the recorded spawn delay.
  std::vector<SessionStart> spawned_by(std::size_t session, std::size_t completed_requests, rt::Time at) const;

 private:
  const Workload* workload_;
  ArrivalOptions options_;
  std::vector<SessionStart> starts_;
  std::vector<std::vector<std::size_t>> children_;  // per session, its sub-agents in workload order
};

}  // namespace nvl::emu
