#pragma once
// A conversation: requests in order; the next one leaves after the previous answer (closed loop).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/time.h"
#include "emu/workload/request.h"

namespace nvl::emu {

struct SessionLabels {
  std::string source;      // "mooncake", "azure", "claude-code", "gen:codex"
  std::string session_id;  // the trace's own id (file name, line, trial number)
  std::string subagent;    // the sub-agent's id; empty for a top-level conversation
};

// Where a sub-agent session starts: `delay` after its parent has completed `after_requests` requests.
struct SpawnPoint {
  std::size_t parent = 0;  // index into Workload::sessions
  std::size_t after_requests = 0;
  rt::Duration delay;
};

struct Session {
  SessionLabels labels;
  std::int32_t block_size_tokens = 0;
  // Open-loop traces (Mooncake, Azure) record when each session started; closed-loop ones do not.
  std::optional<rt::Time> recorded_start;
  std::optional<SpawnPoint> spawn;  // set for sub-agents, which start from their parent instead
  std::vector<Request> requests;
};

}  // namespace nvl::emu
