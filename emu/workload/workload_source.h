#pragma once
// Opens a workload named on the command line or in a scenario:
//   a .jsonl file (Mooncake), a .csv file (Azure), a .json file or a folder of them (Claude Code), another
//   extension by its content; `gen:codex[:trials=N,seed=S,profile=PATH]` for the coding-agent generator; or
//   `bench:isl=N,osl=M[,...]` for the benchmark workload (bench_spec.h), `options.max_sessions` requests.
#include <optional>
#include <string>

#include "emu/workload/coding_agent_profile.h"
#include "emu/workload/load_options.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

struct WorkloadSource {
  Workload workload;
  std::optional<CodingAgentProfile> profile;  // set for a generator: the figures it must match
};

WorkloadSource open_workload_source(const std::string& spec, const LoadOptions& options = {});

}  // namespace nvl::emu
