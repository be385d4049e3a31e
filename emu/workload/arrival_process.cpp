#include "emu/workload/arrival_process.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "emu/rt/errors.h"
#include "emu/rt/rng.h"

namespace nvl::emu {

ArrivalProcess::ArrivalProcess(const Workload& workload, const ArrivalOptions& options)
    : workload_(&workload), options_(options), children_(workload.sessions.size()) {
  auto positive = [](double v, const char* key) {
    if (!(v > 0) || !std::isfinite(v)) {
      throw rt::InputError("workload arrival options", key, "expected a positive number, got " + std::to_string(v));
    }
  };
  positive(options.rate_scale, "rate_scale");
  positive(options.time_scale, "time_scale");
  rt::Rng rng(rt::Rng::derive_seed(options.seed, "workload.session_starts"));
  rt::Time poisson_clock = rt::Time::zero();
  if (options.starts == ArrivalOptions::Starts::kPoisson) positive(options.sessions_per_s, "sessions_per_s");
  const double mean_gap_s = 1.0 / (options.sessions_per_s * options.rate_scale);
  const std::size_t top_level = static_cast<std::size_t>(
      std::count_if(workload.sessions.begin(), workload.sessions.end(), [](const Session& s) { return !s.spawn; }));
  if (options.burst_sessions > top_level) {
    throw rt::InputError(workload.source, "burst.sessions",
                         std::to_string(options.burst_sessions) + " sessions in the burst, but the workload starts only " +
                             std::to_string(top_level) + " on their own (sub-agents start from their parents)");
  }
  // Its own stream: a burst moves no other session's draw but the Poisson clock's.
  rt::Rng burst_rng(rt::Rng::derive_seed(options.seed, "workload.burst_starts"));
  std::size_t burst_left = options.burst_sessions;
  for (std::size_t i = 0; i < workload.sessions.size(); ++i) {
    const Session& s = workload.sessions[i];
    if (s.spawn) {
      children_[s.spawn->parent].push_back(i);
      continue;
    }
    if (burst_left > 0) {
      --burst_left;
      const double at_s = options.burst_at_s + burst_rng.uniform() * options.burst_within_s;
      starts_.push_back({i, rt::Time::zero() + rt::from_seconds(at_s)});
    } else if (options.starts == ArrivalOptions::Starts::kPoisson) {
      poisson_clock += rt::from_seconds(rng.exponential(mean_gap_s));
      starts_.push_back({i, poisson_clock});
    } else {
      if (!s.recorded_start) {
        throw rt::InputError(workload.source, "session '" + s.labels.session_id + "'",
                             "has no recorded start time: use Poisson session starts");
      }
      starts_.push_back({i, rt::Time::zero() + scaled(s.recorded_start->since_start(), 1.0 / options.rate_scale)});
    }
  }
  std::stable_sort(starts_.begin(), starts_.end(),
                   [](const SessionStart& a, const SessionStart& b) { return a.at < b.at; });
}

SessionCursor ArrivalProcess::open(const SessionStart& start) const {
  return SessionCursor(workload_->sessions.at(start.session), start.session, start.at, options_);
}

std::vector<SessionStart> ArrivalProcess::spawned_by(std::size_t session, std::size_t completed_requests,
                                                     rt::Time at) const {
  std::vector<SessionStart> out;
  for (const std::size_t child : children_.at(session)) {
    const SpawnPoint& p = *workload_->sessions[child].spawn;
    if (p.after_requests == completed_requests) out.push_back({child, at + scaled(p.delay, options_.time_scale)});
  }
  return out;
}

}  // namespace nvl::emu
