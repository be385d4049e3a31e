#include "emu/scenario/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <sstream>
#include <vector>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "emu/workload/arrival_process.h"
#include "emu/workload/reblock.h"
#include "emu/workload/workload_source.h"
#include "emu/rt/errors.h"
#include "engine/hal/hal_error.h"
#include "engine/hal/types.h"
#include "engine/model/model_profile.h"
#include "engine/system/pd_system.h"
#include "fabric/fabric_rdma.h"
#include "fabric/host_network.h"

namespace nvl::emu {

namespace {

constexpr double kMsPerS = 1e3;
constexpr std::uint64_t kBytesPerKiB = 1024;
constexpr std::int64_t kKvBlockTokens = 64;  // the engine's KV cache block size (NormalGroupConfig default)

engine::GraceTierPolicy grace_policy(const std::string& name) {
  if (name == "write_through") return engine::GraceTierPolicy::write_through;
  if (name == "write_back") return engine::GraceTierPolicy::write_back;
  return engine::GraceTierPolicy::off;
}

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

// Feeds the workload to the system: each session's next request leaves at its earliest departure after
// the previous answer; sub-agents start when their parent reaches their spawn point.
class Driver {
 public:
  Driver(rt::Runtime& rt, const Workload& workload, const ArrivalProcess& arrivals)
      : rt_(rt), workload_(workload), arrivals_(arrivals) {}

  void attach(engine::PdSystem& system) { system_ = &system; }
  void start() {
    for (const auto& s : arrivals_.starts()) schedule_start(s);
  }

  void on_done(const engine::RequestTiming& t) {
    timings_.push_back(t);
    const auto it = owner_.find(t.id);
    if (it == owner_.end()) return;
    const std::size_t c = it->second;
    owner_.erase(it);
    SessionCursor& cursor = *cursors_[c];
    cursor.complete(rt_.now());
    for (const auto& child : arrivals_.spawned_by(cursor.session_index(), cursor.next_index(), rt_.now())) {
      schedule_start(child);
    }
    send_next(c);
  }

  const std::vector<engine::RequestTiming>& timings() const { return timings_; }
  std::uint64_t submitted() const { return next_id_ - 1; }
  std::size_t outstanding() const { return owner_.size(); }

 private:
  void schedule_start(const SessionStart& s) {
    rt_.call_at(std::max(s.at, rt_.now()), [this, s] {
      cursors_.push_back(std::make_unique<SessionCursor>(arrivals_.open(s)));
      const std::size_t c = cursors_.size() - 1;
      for (const auto& child : arrivals_.spawned_by(s.session, 0, rt_.now())) schedule_start(child);
      send_next(c);
    });
  }

  void send_next(std::size_t c) {
    const SessionCursor& cursor = *cursors_[c];
    if (cursor.done()) return;
    rt_.call_at(std::max(cursor.earliest_departure(), rt_.now()), [this, c] { submit(c); });
  }

  void submit(std::size_t c) {
    const SessionCursor& cursor = *cursors_[c];
    const Session& session = workload_.sessions[cursor.session_index()];
    const Request& req = cursor.next();
    engine::RequestState r;
    r.id = static_cast<engine::RequestId>(next_id_++);
    r.arrival = rt_.now();
    r.prompt_tokens = req.prompt_tokens;
    r.max_output_tokens = std::max<std::int64_t>(1, req.output_tokens);  // every call yields its first token
    const auto hashes = reblock(req.block_hashes.ids(), req.prompt_tokens, session.block_size_tokens,
                                static_cast<std::int32_t>(kKvBlockTokens));
    r.prompt_hashes.assign(hashes.begin(), hashes.end());
    owner_[r.id] = c;
    system_->submit(std::move(r));
  }

  rt::Runtime& rt_;
  const Workload& workload_;
  const ArrivalProcess& arrivals_;
  engine::PdSystem* system_ = nullptr;
  std::vector<std::unique_ptr<SessionCursor>> cursors_;
  std::map<engine::RequestId, std::size_t> owner_;  // request in flight -> its session cursor
  std::uint64_t next_id_ = 1;
  std::vector<engine::RequestTiming> timings_;
};

}  // namespace

RunReport run_scenario(const Scenario& sc) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto& dep = sc.deployment;

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
  EmulatedCluster cluster(rt, sc.cluster.gpu_profile, sc.cluster.fabric_profile,
                          static_cast<int>(dep.normal_gpus + dep.prefill_gpus), static_cast<int>(sc.cluster.units));
  fabric::FabricRdma rdma(cluster.fabric());
  fabric::HostNetwork network(cluster.fabric());
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path(sc.model.profile));

  const hal::DType kv_dtype = hal::dtype_from_string(sc.model.kv_dtype);
  engine::PdDeployment d;
  d.normal_gpus = cluster.devices(0, static_cast<int>(dep.normal_gpus));
  d.normal.kv_dtype = kv_dtype;
  d.normal.block_tokens = kKvBlockTokens;
  d.normal.grace_policy = grace_policy(dep.grace_tier);
  d.normal.grace_bytes_per_rank = dep.grace_bytes_per_gpu;
  d.normal.scheduler.token_budget = dep.token_budget;
  d.normal.scheduler.max_running = dep.max_running;
  d.prefill_gpus = cluster.devices(static_cast<int>(dep.normal_gpus), static_cast<int>(dep.prefill_gpus));
  d.prefill.kv_dtype = kv_dtype;
  d.prefill.block_tokens = kKvBlockTokens;
  d.system.router.prefill_threshold_tokens = dep.threshold_tokens;
  d.system.router.block_tokens = kKvBlockTokens;
  d.system.router.policy = dep.router_policy;
  d.system.router.prefill_worker = dep.prefill_gpus > 0;

  Driver driver(rt, source.workload, arrivals);
  // A model that does not fit its GPUs, or a TP degree that does not divide it, is a bad deployment.
  std::unique_ptr<engine::PdSystem> built;
  try {
    built = std::make_unique<engine::PdSystem>(
        rt, model, cluster.collectives(), &rdma, std::move(d), [](engine::RequestId, std::int64_t, bool, bool) {},
        [&driver](const engine::RequestTiming& t) { driver.on_done(t); }, &network);
  } catch (const hal::HalError& e) {
    throw rt::InputError(sc.file, "deployment", std::string("does not fit: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw rt::InputError(sc.file, "deployment", e.what());
  }
  engine::PdSystem& system = *built;
  driver.attach(system);
  driver.start();

  const rt::Time limit = rt::Time::zero() + rt::from_seconds(sc.run.max_sim_seconds);
  const rt::RunResult result = rt.run(rt::RunOptions{.until = limit});

  RunReport r;
  r.scenario = sc.name;
  r.seed = sc.seed;
  r.event_log_hash = rt.log().hash_hex();
  r.stop_reason = result.reason == rt::RunResult::Stop::quiescent ? "quiescent" : "time_limit";
  r.sim_time_s = rt.now().since_start().seconds();
  r.requests_total = driver.submitted();
  r.requests_in_flight = driver.outstanding();
  std::vector<double> ttft, tpot, e2e;
  for (const auto& t : driver.timings()) {
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
