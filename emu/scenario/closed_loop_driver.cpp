#include "emu/scenario/closed_loop_driver.h"

#include <string>

#include "emu/rt/errors.h"

namespace nvl::emu {

ClosedLoopDriver::ClosedLoopDriver(rt::Runtime& rt, const Workload& workload, const ClosedLoopOptions& options,
                                   std::int64_t kv_block_tokens, const std::string& file)
    : WorkloadDriver(rt, kv_block_tokens), workload_(workload), options_(options) {
  for (const Session& s : workload.sessions) {
    if (s.requests.size() != 1 || s.spawn) {
      throw rt::InputError(file, "workload.concurrency",
                           "a closed loop sends one-request sessions, but session '" + s.labels.session_id + "' of " +
                               workload.source + " has " + std::to_string(s.requests.size()) +
                               (s.spawn ? " requests and is a sub-agent" : " requests"));
    }
  }
  if (options.requests < 1) {
    throw rt::InputError(file, "workload.warmup_requests",
                         std::to_string(options.warmup) + " warm-up requests leave none of the " +
                             std::to_string(workload.sessions.size()) + " of " + workload.source + " to measure");
  }
  const auto needed = static_cast<std::size_t>(options.warmup + options.requests);
  if (workload.sessions.size() < needed) {
    throw rt::InputError(file, "workload.requests",
                         std::to_string(options.warmup) + " warm-up and " + std::to_string(options.requests) +
                             " measured requests asked for, but " + workload.source + " holds " +
                             std::to_string(workload.sessions.size()));
  }
}

void ClosedLoopDriver::start() {
  const auto warmup = static_cast<std::size_t>(options_.warmup);
  runtime().call_at(runtime().now(), [this, warmup] {
    fill(warmup > 0 ? warmup : static_cast<std::size_t>(options_.requests));
  });
}

void ClosedLoopDriver::on_done(const engine::RequestTiming& t) {
  record(t);
  if (in_flight_.erase(t.id) == 0) return;
  const auto warmup = static_cast<std::size_t>(options_.warmup);
  if (next_ <= warmup && warmup > 0) {
    // Warm-up phase: refill it, or start the measured phase once it has drained.
    if (next_ < warmup) {
      fill(warmup);
    } else if (in_flight_.empty()) {
      fill(warmup + static_cast<std::size_t>(options_.requests));
    }
    return;
  }
  fill(warmup + static_cast<std::size_t>(options_.requests));
}

void ClosedLoopDriver::fill(std::size_t end) {
  while (next_ < end && in_flight_.size() < static_cast<std::size_t>(options_.concurrency)) {
    const Session& s = workload_.sessions[next_];
    engine::RequestState r = make_request(s, s.requests.front());
    if (next_ < static_cast<std::size_t>(options_.warmup)) warmup_ids_.insert(r.id);
    in_flight_.insert(r.id);
    ++next_;
    send(std::move(r));
  }
}

}  // namespace nvl::emu
