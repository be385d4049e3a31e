#pragma once
// Runs one scenario on a virtual clock: the emulated cluster, the P/D serving system (normal GPUs
// [0, normal_gpus), prefill GPUs the next prefill_gpus) and the workload driven closed-loop, until
// quiescence or run.max_sim_seconds.
#include "emu/scenario/run_report.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {

RunReport run_scenario(const Scenario& scenario);

}  // namespace nvl::emu
