#pragma once
// A measured row as a scenario: its system's cluster and GPU profiles, its model, its precision, its
// workers as deployment pools and its benchmark as a bench workload. What the mapping cannot know (an
// unknown system, model or precision) is a reason, never a guess; whether the engine runs the layout is
// the deployment check's to say when the scenario is loaded.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "emu/measured/measured_table.h"

namespace nvl::emu {

// How long a row runs: the first `warmup_requests` are left out of the metrics; the measured phase opens with
// a burst of `concurrency` requests, as a benchmark client's does, and its later turns are the steady state.
struct BenchSize {
  std::int64_t requests = 0;  // measured, after the warm-up
  std::int64_t warmup_requests = 0;
};
BenchSize bench_size(std::int64_t concurrency);

struct RowScenario {
  std::string config;                      // the row's layout and benchmark in one line
  std::optional<nlohmann::json> scenario;  // when the row maps
  std::string reason;                      // why it does not
};

RowScenario map_row(const MeasuredRow& row);

}  // namespace nvl::emu
