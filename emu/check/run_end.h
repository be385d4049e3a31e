#pragma once
// What the runner knows when a run is over, for the checkers' verdicts.
#include <cstdint>
#include <string>

#include "emu/check/resource_snapshot.h"

namespace nvl::emu {

struct RunEnd {
  bool quiescent = false;                // the run drained; false: stopped at the time limit
  std::uint64_t system_in_flight = 0;    // requests the serving system itself still holds
  ResourceSnapshot baseline;             // after start-up, before the first request
  ResourceSnapshot final;                // at the end of the run
  std::uint64_t error_records = 0;       // error-severity records in the event log
  std::string first_error;               // the first of them, as its JSON line
  std::string event_log_hash;
};

}  // namespace nvl::emu
