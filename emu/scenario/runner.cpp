#include "emu/scenario/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <vector>

#include "emu/rt/virtual_runtime.h"
#include "emu/scenario/deployment.h"
#include "emu/scenario/session_driver.h"
#include "emu/workload/arrival_process.h"
#include "emu/workload/workload_source.h"

namespace nvl::emu {

namespace {

constexpr double kMsPerS = 1e3;
constexpr std::uint64_t kBytesPerKiB = 1024;

// VmHWM of /proc/self/status: the process's peak resident set (0 where there is no /proc).
std::uint64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream in(line.substr(line.find(':') + 1));
      std::uint64_t kib = 0;
      in >> kib;
      return kib * kBytesPerKiB;
    }
  }
  return 0;
}

// Mean and nearest-rank percentiles.
LatencySummaryMs summarize(std::vector<double> ms) {
  LatencySummaryMs s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.count = ms.size();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  const auto pct = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::clamp<std::size_t>(rank, 1, ms.size()) - 1];
  };
  constexpr double kP50 = 0.50, kP90 = 0.90, kP99 = 0.99;
  s.p50 = pct(kP50);
  s.p90 = pct(kP90);
  s.p99 = pct(kP99);
  return s;
}

}  // namespace

RunReport run_scenario(const Scenario& sc) {
  const auto wall_start = std::chrono::steady_clock::now();

  LoadOptions load;
  if (sc.workload.max_sessions > 0) load.max_sessions = static_cast<std::size_t>(sc.workload.max_sessions);
  const WorkloadSource source = open_workload_source(sc.workload.source, load);
  ArrivalOptions arrival;
  arrival.starts = ArrivalOptions::Starts::kPoisson;
  arrival.pacing = ArrivalOptions::Pacing::kThinkTime;
  arrival.sessions_per_s = sc.workload.rate_sessions_per_s;
  arrival.seed = sc.seed;
  const ArrivalProcess arrivals(source.workload, arrival);

  rt::VirtualRuntime rt(rt::LoopOptions{.seed = sc.seed});
  std::unique_ptr<SessionDriver> driver;
  Deployment deployment(rt, sc, [](engine::RequestId, std::int64_t, bool, bool) {},
                        [&driver](const engine::RequestTiming& t) { driver->on_done(t); });
  engine::PdSystem& system = deployment.system();
  driver = std::make_unique<SessionDriver>(rt, source.workload, arrivals, deployment.kv_block_tokens());
  driver->attach(system);
  driver->start();

  const rt::Time limit = rt::Time::zero() + rt::from_seconds(sc.run.max_sim_seconds);
  const rt::RunResult result = rt.run(rt::RunOptions{.until = limit});

  RunReport r;
  r.scenario = sc.name;
  r.seed = sc.seed;
  r.event_log_hash = rt.log().hash_hex();
  r.stop_reason = result.reason == rt::RunResult::Stop::quiescent ? "quiescent" : "time_limit";
  r.sim_time_s = rt.now().since_start().seconds();
  r.requests_total = driver->submitted();
  r.requests_in_flight = driver->outstanding();
  std::vector<double> ttft, tpot, e2e;
  for (const auto& t : driver->timings()) {
    if (!t.failure.empty()) {
      ++r.requests_failed;
      ++r.failed_by_reason[t.failure];
      continue;
    }
    ++r.requests_completed;
    r.input_tokens += static_cast<std::uint64_t>(t.prompt_tokens);
    r.output_tokens += static_cast<std::uint64_t>(t.output_tokens);
    if (t.first_token) ttft.push_back((*t.first_token - t.arrival).seconds() * kMsPerS);
    if (t.finished) e2e.push_back((*t.finished - t.arrival).seconds() * kMsPerS);
    if (t.first_token && t.finished && t.output_tokens > 1) {
      tpot.push_back((*t.finished - *t.first_token).seconds() * kMsPerS / static_cast<double>(t.output_tokens - 1));
    }
  }
  r.ttft = summarize(std::move(ttft));
  r.tpot = summarize(std::move(tpot));
  r.e2e = summarize(std::move(e2e));
  r.routing["local"] = system.router().routed(engine::PrefillPath::local);
  r.routing["prefill_worker"] = system.router().routed(engine::PrefillPath::prefill_worker);
  r.kv_transfer_bytes = system.transfer_bytes();
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.peak_rss_bytes = peak_rss_bytes();
  return r;
}

}  // namespace nvl::emu
