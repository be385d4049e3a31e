#pragma once
// Runs one scenario on a virtual clock: the emulated cluster, the P/D serving system (normal GPUs
// [0, normal_gpus), prefill GPUs the next prefill_gpus) and the workload driven closed-loop, until
// quiescence or run.max_sim_seconds. The run goes in slices of outputs.timeline_interval_s of simulated
// time; between slices the timeline is sampled and the progress bar drawn, which schedule nothing, so
// neither changes the event-log hash. What the client sees (every delivered token batch, every request's
// end) is in the event log, so any change of timing changes the hash. Every standard checker (emu/check/) watches the run; the
// scenario's assertions are checked against the report's figures.
#include <ostream>

#include "emu/report/run_report.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {

struct RunControls {
  std::ostream* progress = nullptr;  // where to draw a progress bar (a terminal); null: none
  bool check_determinism = false;    // run twice and compare hashes, as checks.determinism does
  std::ostream* event_log = nullptr;  // where to write the event log as JSON lines while it runs; null: nowhere
};

RunReport run_scenario(const Scenario& scenario, const RunControls& controls = {});

}  // namespace nvl::emu
