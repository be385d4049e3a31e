#pragma once
#include <cstddef>
#include <cstdint>

namespace nvl::emu {

// How sessions start and how a session's next request is timed.
struct ArrivalOptions {
  enum class Starts {
    kRecorded,  // replay each session's recorded start (Mooncake, Azure timestamps)
    kPoisson,   // sessions start as a Poisson process at `sessions_per_s`, in workload order
  };
  enum class Pacing {
    kThinkTime,        // closed loop: previous answer done + think time
    kRecordedOffsets,  // the recorded pace (session start + offset), never before the previous answer
  };
  Starts starts = Starts::kRecorded;
  Pacing pacing = Pacing::kThinkTime;
  double sessions_per_s = 1.0;  // Poisson rate before rate_scale
  double rate_scale = 1.0;      // > 1: sessions start more often (recorded starts are compressed)
  double time_scale = 1.0;      // multiplies think times, recorded gaps and spawn delays (0.5 = twice as fast)
  // A burst: the first `burst_sessions` top-level sessions (workload order) start at seeded uniform times in
  // [burst_at, burst_at + burst_within); the others start as `starts` says.
  std::size_t burst_sessions = 0;
  double burst_at_s = 0;
  double burst_within_s = 0;
  std::uint64_t seed = 1;
};

}  // namespace nvl::emu
