#pragma once
// The load reports every DP rank sends the router: each rank's load, when it changed, at the
// configured interval while anything changes (none while nothing does, so that an idle or stuck
// system does not tick forever). One timer serves the ranks of every decoding instance, as before the
// processes were split: a timer per instance would move the report times, and so the results.
#include <optional>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/system/control_plane.h"
#include "engine/system/pd_directory.h"

namespace nvl::engine {

class LoadReporter {
 public:
  LoadReporter(rt::Runtime& rt, rt::Duration interval, ControlPlane& control, const PdDirectory& dir);
  // The router's first view, at once.
  void start();
  // A rank's load may change: a report follows within the interval.
  void arm();

 private:
  void publish();

  rt::Runtime& rt_;
  rt::Duration interval_;
  ControlPlane& control_;
  const PdDirectory& dir_;
  std::vector<std::optional<proto::LoadReport>> last_;  // per rank: the last load it published
  bool armed_ = false;
};

}  // namespace nvl::engine
