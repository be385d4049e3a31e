#pragma once
// Faults injected while serving (POST /admin/fault, the gRPC InjectFault call). A fault is one entry
// of a scenario's `faults` list (scenarios/README.md, the vocabulary of emu/faults), without `at_s`: it
// hits now, through the scenario fault injector, e.g.
//   {"kind": "gpu_lost", "target": 3}
//   {"kind": "straggler", "target": "normal rank 2", "factor": 0.5, "duration_s": 10}
//   {"kind": "link_degrade", "target": ["rack0/tray0/gpu0", "rack0/nvswitch0"], "factor": 0.25}
// Runtime thread only.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/faults/fault_injector.h"
#include "emu/faults/fault_plan.h"
#include "emu/scenario/deployment.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu::live {

class LiveFaults {
 public:
  LiveFaults(rt::Runtime& rt, const Scenario& scenario, Deployment& deployment);

  // Checks the fault (an rt::InputError naming "POST /admin/fault" and the key when it is bad) and
  // schedules it now; `applied` runs with its description once it has hit.
  void inject(const nlohmann::json& fault, std::function<void(const std::string&)> applied);

 private:
  rt::Runtime& rt_;
  Deployment& deployment_;
  FaultContext context_;
  std::vector<std::unique_ptr<FaultInjector>> injectors_;  // kept: they undo faults that have a duration
};

}  // namespace nvl::emu::live
