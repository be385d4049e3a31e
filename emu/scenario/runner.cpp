#include "emu/scenario/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/check/assertion_check.h"
#include "emu/check/determinism_checker.h"
#include "emu/check/standard_checkers.h"
#include "emu/rt/errors.h"
#include "emu/rt/virtual_runtime.h"
#include "emu/faults/fault_injector.h"
#include "emu/report/benchmark_recorder.h"
#include "emu/report/request_latency.h"
#include "emu/scenario/closed_loop_driver.h"
#include "emu/scenario/deployment.h"
#include "emu/scenario/gpu_roles.h"
#include "emu/scenario/progress_bar.h"
#include "emu/scenario/session_driver.h"
#include "emu/scenario/timeline_sampler.h"
#include "emu/workload/arrival_process.h"
#include "emu/workload/workload_source.h"

namespace nvl::emu {

namespace {

constexpr double kMsPerS = 1e3;
constexpr std::uint64_t kBytesPerKiB = 1024;
constexpr std::size_t kCdfPoints = 101;  // quantiles kept for the CDF plots: 0%, 1%, ..., 100%

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

// Mean, nearest-rank percentiles and the quantiles of the CDF.
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
  for (std::size_t i = 0; i < kCdfPoints; ++i) {
    s.quantiles.push_back(pct(static_cast<double>(i) / static_cast<double>(kCdfPoints - 1)));
  }
  return s;
}

ArrivalOptions arrival_options(const Scenario& sc) {
  ArrivalOptions a;
  a.starts = sc.workload.starts == "recorded" ? ArrivalOptions::Starts::kRecorded : ArrivalOptions::Starts::kPoisson;
  a.pacing = ArrivalOptions::Pacing::kThinkTime;
  a.sessions_per_s = sc.workload.rate_sessions_per_s;
  a.rate_scale = sc.workload.rate_scale;
  a.time_scale = sc.workload.time_scale;
  a.seed = sc.seed;
  a.burst_sessions = static_cast<std::size_t>(sc.workload.burst_sessions);
  a.burst_at_s = sc.workload.burst_at_s;
  a.burst_within_s = sc.workload.burst_within_s;
  return a;
}

// The kernel time every device launched, by kind (RunReport::kernel_time_by_kind), in seconds.
std::map<std::string, RunReport::KernelTime> kernel_time_by_kind(fakegpu::GpuFleet& fleet) {
  fakegpu::PricedTime all;
  for (int i = 0; i < fleet.size(); ++i) all.add(fleet.device(i).priced_time());
  std::map<std::string, RunReport::KernelTime> out;
  for (std::size_t k = 0; k < fakegpu::PricedTime::kParts; ++k) {
    const fakegpu::PricedTime::Part p = all.part(k);
    if (p.ns <= 0) continue;
    const std::string name = k == fakegpu::PricedTime::kGraphLaunch
                                 ? "graph_launch"
                                 : std::string(hal::to_string(static_cast<hal::KernelKind>(k)));
    out[name] = {p.ns * 1e-9, p.measured_ns * 1e-9};
  }
  return out;
}

// What each pool instance did, in the pools' order (the system numbers its instances the same way).
nlohmann::json pool_figures(const ScenarioDeployment& dep, engine::PdSystem& system) {
  nlohmann::json out = nlohmann::json::array();
  std::size_t decoding = 0, prefill = 0;
  for (const ScenarioPool& p : dep.pools) {
    for (std::size_t i = 0; i < p.instance_gpus.size(); ++i) {
      nlohmann::json e{{"pool", p.name}, {"role", p.role}, {"instance", i}, {"gpus", p.instance_gpus[i]}};
      if (p.decodes()) {
        e["steps"] = system.decode_instance(decoding).steps();
        e["routed"] = system.routed_to_instance(decoding++);
      } else {
        const engine::PrefillWorker& worker = system.prefill(prefill);
        e["steps"] = worker.steps();
        e["prefilled"] = system.prefilled_by(prefill++);
        if (worker.ranks() > 1) {
          nlohmann::json per_rank = nlohmann::json::array();
          for (std::int32_t r = 0; r < worker.ranks(); ++r) per_rank.push_back(worker.prefilled(r));
          e["prefilled_per_dp_rank"] = std::move(per_rank);
        }
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

// Blocks held by requests in every KV pool, and bytes allocated in every memory of the fleet.
ResourceSnapshot snapshot(Deployment& d) {
  ResourceSnapshot s;
  engine::PdSystem& system = d.system();
  for (std::int32_t r = 0; r < system.ranks(); ++r) {
    const engine::KvCacheManager& kv = system.kv(r);
    s.kv_used_blocks["rank" + std::to_string(r) + " gpu"] = kv.gpu().used_blocks();
    s.kv_used_blocks["rank" + std::to_string(r) + " grace"] = kv.grace().used_blocks();
  }
  for (std::size_t i = 0; i < system.prefill_instances(); ++i) {
    const std::string instance = system.prefill_instances() > 1 ? "prefill" + std::to_string(i) : "prefill";
    engine::PrefillWorker& worker = system.prefill(i);
    for (std::int32_t r = 0; r < worker.ranks(); ++r) {
      const std::string name = worker.ranks() > 1 ? instance + " rank" + std::to_string(r) : instance;
      s.kv_used_blocks[name + " gpu"] = worker.kv(r).gpu().used_blocks();
      s.kv_used_blocks[name + " grace"] = worker.kv(r).grace().used_blocks();
    }
  }
  fakegpu::GpuFleet& fleet = d.cluster().fleet();
  for (int i = 0; i < fleet.size(); ++i) {
    const std::string name = "gpu" + std::to_string(i) + " hbm";
    if (fleet.device(i).health() == hal::DeviceHealth::lost) {
      s.lost.insert(name);
      continue;
    }
    s.memory_used_bytes[name] = fleet.device(i).memory().used_bytes();
  }
  for (int h = 0; h < fleet.host_count(); ++h) {
    s.memory_used_bytes["host" + std::to_string(h) + " pinned"] = fleet.host_memory(h).used_bytes();
  }
  return s;
}

std::string span_name(std::string_view op, bool ok) { return ok ? std::string(op) : "failed: " + std::string(op); }

// A transfer's or copy's trace arguments.
std::string bytes_args(std::uint64_t bytes) { return bytes > 0 ? R"({"bytes": )" + std::to_string(bytes) + "}" : std::string(); }

// A step span's arguments as a JSON object's text, keys in the order such an object prints them. Written
// out directly: built as a JSON object, every step span in the trace window cost ~33,000 instructions
// (16% of a short run's).
std::string step_args(const hal::StepLabel& l, const GpuRole& role) {
  std::string args = "{\"batch\":" + std::to_string(l.prefill_requests + l.decode_requests);
  const auto field = [&args](std::string_view key, const std::string& value) {
    args.append(",\"").append(key).append("\":").append(value);
  };
  field("decode_requests", std::to_string(l.decode_requests));
  field("decode_tokens", std::to_string(l.decode_tokens));
  field("instance", std::to_string(role.instance));
  field("kv_context_tokens", std::to_string(l.context_tokens));
  field("layers", "\"" + std::to_string(l.first_layer) + "-" + std::to_string(l.end_layer - 1) + "\"");
  if (l.micro_batch >= 0) field("micro_batch", std::to_string(l.micro_batch));
  field("pool", nlohmann::json(role.pool).dump());  // escaped as the scenario named it
  field("prefill_requests", std::to_string(l.prefill_requests));
  field("prefill_tokens", std::to_string(l.prefill_tokens));
  if (role.dp_rank >= 0) field("rank", std::to_string(role.dp_rank));
  field("step", std::to_string(l.step));
  args.push_back('}');
  args.shrink_to_fit();  // the trace keeps it: no room grown while appending (~240 bytes a span)
  return args;
}

// A GPU span's name and arguments: a step says what it computed and for whom (its pool, instance and
// rank); a copy its size.
std::pair<std::string, std::string> gpu_span(const fakegpu::OpSpan& s, const GpuRole& role) {
  if (s.step == nullptr || !s.step->is_step()) return {span_name(s.op, s.ok), bytes_args(s.bytes)};
  return {span_name(std::string(s.step->kind()) + " step", s.ok), step_args(*s.step, role)};
}

// Wires the trace recorder to the fleet's streams, the fabric's transfers and the event log's warnings.
class TraceWiring {
 public:
  // kernels: what runs inside each graph too (outputs.trace_detail "kernels"), on the graph's track.
  TraceWiring(TraceRecorder& trace, Deployment& d, const ScenarioDeployment& layout, bool kernels)
      : trace_(trace), deployment_(d) {
    fakegpu::GpuFleet& fleet = d.cluster().fleet();
    roles_ = gpu_roles(layout, fleet.size());
    for (int i = 0; i < fleet.size(); ++i) {
      const GpuRole& role = roles_[static_cast<std::size_t>(i)];
      const int pid = trace_.process(gpu_name(i, role));
      fleet.device(i).set_span_observer([this, pid, &role](const fakegpu::OpSpan& s) {
        if (!trace_.in_window(s.start)) return;
        auto [name, args] = gpu_span(s, role);
        trace_.span(pid, trace_.thread(pid, s.stream), name, s.start, s.end, std::move(args));
      });
      if (!kernels) continue;
      fleet.device(i).set_detail_observer([this, pid](const fakegpu::OpSpan& s) {
        if (!trace_.in_window(s.start)) return;
        trace_.span(pid, trace_.thread(pid, s.stream), span_name(s.op, s.ok), s.start, s.end, bytes_args(s.bytes));
      });
    }
    fabric::Fabric& fabric = d.cluster().fabric();
    fabric.set_transfer_observer([this, &fabric](const fabric::TransferSpan& s) {
      if (s.channel < 0 || !trace_.in_window(s.start)) return;
      const int pid = trace_.process("link " + fabric.topology().channels()[static_cast<std::size_t>(s.channel)].name);
      const int tid = trace_.thread(pid, "transfers");
      trace_.span(pid, tid, span_name(s.op, s.ok), s.start, s.end, bytes_args(s.bytes));
    });
    faults_ = trace_.process("faults and warnings");
    links_ = trace_.process("link utilisation");
  }

  // Faults are logged as warnings; errors are broken invariants: both become instants.
  void on_record(rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields,
                 rt::Severity severity) {
    if (severity < rt::Severity::warning || !trace_.in_window(t)) return;
    trace_.instant(faults_, std::string(source) + " " + std::string(kind), t, fields.dump());
  }

  void on_sample(rt::Time now, const Timeline& t) {
    if (!trace_.in_window(now)) return;
    for (const auto& [cls, v] : t.link_mean) {
      if (!v.empty()) trace_.counter(links_, cls + " utilisation", now, v.back());
    }
  }

  // Past the window nothing more is kept: stop paying for the observers.
  void maybe_detach(rt::Time now) {
    if (detached_ || !trace_.past_window(now)) return;
    detached_ = true;
    fakegpu::GpuFleet& fleet = deployment_.cluster().fleet();
    for (int i = 0; i < fleet.size(); ++i) {
      fleet.device(i).set_span_observer(nullptr);
      fleet.device(i).set_detail_observer(nullptr);
    }
    deployment_.cluster().fabric().set_transfer_observer(nullptr);
  }

 private:
  TraceRecorder& trace_;
  Deployment& deployment_;
  std::vector<GpuRole> roles_;  // sized once: the observers hold references into it
  int faults_ = 0;
  int links_ = 0;
  bool detached_ = false;
};

RunReport run_once(const Scenario& sc, const RunControls& controls, std::vector<std::unique_ptr<RunChecker>> checkers,
                   bool with_outputs) {
  const auto wall_start = std::chrono::steady_clock::now();

  LoadOptions load;
  if (sc.workload.max_sessions > 0) load.max_sessions = static_cast<std::size_t>(sc.workload.max_sessions);
  if (sc.workload.requests > 0) {
    load.max_sessions = static_cast<std::size_t>(sc.workload.warmup_requests + sc.workload.requests);
  }
  load.trace_block_tokens = static_cast<std::int32_t>(sc.workload.trace_block_tokens);
  const WorkloadSource source = open_workload_source(sc.workload.source, load);
  if (sc.workload.requests > 0 && source.workload.request_count() != source.workload.sessions.size()) {
    throw rt::InputError(sc.file, "workload.requests",
                         "counts requests of one-request sessions, but " + sc.workload.source +
                             " has sessions of several: bound it with workload.max_sessions");
  }
  std::optional<ArrivalProcess> arrivals;
  if (sc.workload.concurrency == 0) {
    try {
      arrivals.emplace(source.workload, arrival_options(sc));
    } catch (const rt::InputError& e) {
      throw rt::InputError(sc.file, sc.workload.burst_sessions > 0 ? "workload.starts or workload.burst" : "workload.starts",
                           e.what());
    }
  }

  rt::VirtualRuntime rt(rt::LoopOptions{.seed = sc.seed});
  rt.log().stream_to(controls.event_log);
  std::unique_ptr<WorkloadDriver> driver;
  std::unique_ptr<TimelineSampler> sampler;
  BenchmarkRecorder bench;
  Deployment deployment(
      rt, sc,
      [&](engine::RequestId id, std::int64_t count, bool first, bool finished) {
        rt.log().record_counts(rt.now(), "client", "tokens",
                               {{"request", static_cast<std::int64_t>(id)}, {"count", count}});
        for (auto& c : checkers) c->on_tokens(id, count, first, finished);
        sampler->on_tokens(id, count, first);
        bench.on_tokens(id, count, rt.now());
      },
      [&](const engine::RequestTiming& t) {
        rt.record("client", "done",
                  {{"request", t.id}, {"status", t.failure.empty() ? "finished" : t.failure}, {"output_tokens", t.output_tokens}});
        for (auto& c : checkers) c->on_done(t);
        sampler->on_done(t);
        bench.on_done(t, rt.now());
        driver->on_done(t);
      });
  engine::PdSystem& system = deployment.system();
  FaultInjector faults(rt, sc.faults, rt::Time::zero() + rt::from_seconds(sc.run.max_sim_seconds), deployment.cluster(), system);
  sampler = std::make_unique<TimelineSampler>(rt, deployment, sc.deployment, sc.outputs.timeline_interval_s);
  if (sc.workload.concurrency > 0) {
    const std::int64_t warmup = sc.workload.warmup_requests;
    const std::int64_t measured = sc.workload.requests > 0
                                      ? sc.workload.requests
                                      : static_cast<std::int64_t>(source.workload.sessions.size()) - warmup;
    driver = std::make_unique<ClosedLoopDriver>(
        rt, source.workload, ClosedLoopOptions{.concurrency = sc.workload.concurrency, .warmup = warmup, .requests = measured},
        deployment.kv_block_tokens(), sc.file);
  } else {
    driver = std::make_unique<SessionDriver>(rt, source.workload, *arrivals, deployment.kv_block_tokens());
  }
  driver->attach(system);
  driver->set_submit_observer([&](const engine::RequestState& r) {
    for (auto& c : checkers) c->on_submit(r);
    sampler->on_submit(r);
    bench.on_submit(r.id, r.arrival, driver->is_warmup(r.id));
  });

  std::shared_ptr<TraceRecorder> trace;
  std::optional<TraceWiring> wiring;
  if (with_outputs && sc.outputs.trace) {
    trace = std::make_shared<TraceRecorder>(TraceOptions{sc.outputs.trace_start_s, sc.outputs.trace_window_s,
                                                         static_cast<std::uint64_t>(sc.outputs.trace_max_events)});
    wiring.emplace(*trace, deployment, sc.deployment, sc.outputs.trace_detail == "kernels");
  }
  rt.log().set_observer([&](rt::Time t, std::string_view source_name, std::string_view kind,
                            const nlohmann::json& fields, rt::Severity severity) {
    for (auto& c : checkers) c->on_record(t, source_name, kind, fields, severity);
    faults.on_record(t, source_name, kind, fields);
    if (wiring) wiring->on_record(t, source_name, kind, fields, severity);
  });

  const ResourceSnapshot baseline = snapshot(deployment);
  driver->start();

  std::optional<ProgressBar> progress;
  if (controls.progress != nullptr) progress.emplace(*controls.progress, sc.run.max_sim_seconds);
  const rt::Time limit = rt::Time::zero() + rt::from_seconds(sc.run.max_sim_seconds);
  const rt::Duration slice = rt::from_seconds(sc.outputs.timeline_interval_s);
  rt::Time next = rt::Time::zero() + slice;
  bool quiescent = false;
  for (;;) {
    const rt::RunResult result = rt.run(rt::RunOptions{.until = std::min(next, limit)});
    sampler->sample();
    if (wiring) {
      wiring->on_sample(rt.now(), sampler->timeline());
      wiring->maybe_detach(rt.now());
    }
    if (progress) progress->update(rt.now().since_start().seconds(), driver->timings().size(), driver->submitted());
    if (result.reason == rt::RunResult::Stop::quiescent) {
      quiescent = true;
      break;
    }
    if (rt.now() >= limit) break;
    next = next + slice;
  }
  if (progress) progress->finish();
  rt.log().set_observer(nullptr);

  RunReport r;
  r.scenario = sc.name;
  r.seed = sc.seed;
  r.event_log_hash = rt.log().hash_hex();
  r.stop_reason = quiescent ? "quiescent" : "time_limit";
  r.sim_time_s = rt.now().since_start().seconds();
  // The deployment's GPUs: a pool placed in a second rack leaves the first rack's other GPUs idle and
  // emulated, but they serve nothing and count in no per-GPU figure.
  r.gpus = sc.deployment.decoding_gpus().size() + sc.deployment.prefill_gpus().size();
  r.requests_total = driver->submitted();
  r.requests_in_flight = driver->outstanding();
  std::vector<double> ttft, tpot, e2e;
  r.routing = {{"local", 0}, {"prefill_worker", 0}};
  for (const auto& t : driver->timings()) {
    if (!t.failure.empty()) {
      ++r.requests_failed;
      ++r.failed_by_reason[t.failure];
      continue;
    }
    ++r.requests_completed;
    // Where its prompt was finally prefilled, once per request (a requeued or migrated request is routed
    // more than once; a failed transfer or a dead prefill instance sends it back to its DP rank).
    ++r.routing[t.path == engine::PrefillPath::local ? "local" : "prefill_worker"];
    r.input_tokens += static_cast<std::uint64_t>(t.prompt_tokens);
    r.output_tokens += static_cast<std::uint64_t>(t.output_tokens);
    const RequestLatency l = request_latency(t, kMsPerS);
    if (l.ttft) ttft.push_back(*l.ttft);
    if (l.e2e) e2e.push_back(*l.e2e);
    if (l.tpot) tpot.push_back(*l.tpot);
  }
  r.ttft = summarize(std::move(ttft));
  r.tpot = summarize(std::move(tpot));
  r.e2e = summarize(std::move(e2e));
  r.benchmark = benchmark_metrics(bench.samples(), bench.itl_ms(), r.gpus);
  r.benchmark.warmup_requests = bench.warmup_requests();
  r.benchmark.concurrency = sc.workload.concurrency;
  r.kv_transfer_bytes = system.transfer_bytes();
  r.pools = pool_figures(sc.deployment, system);
  r.kv_hits = sampler->kv_hits();
  r.dp_imbalance = sampler->dp_imbalance();
  r.links = sampler->link_use();
  r.kernel_library = sc.cluster.kernel_library;
  r.kernel_time_by_kind = kernel_time_by_kind(deployment.cluster().fleet());

  RunEnd end;
  end.quiescent = quiescent;
  end.system_in_flight = system.in_flight();
  end.baseline = baseline;
  end.final = snapshot(deployment);
  end.error_records = rt.log().error_count();
  end.first_error = rt.log().first_error().value_or("");
  end.event_log_hash = r.event_log_hash;
  for (auto& c : checkers) r.checks.push_back(NamedCheck{c->name(), c->finish(end)});

  r.timeline = sampler->take();
  r.faults = faults.timeline().to_json();
  r.trace = std::move(trace);
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.peak_rss_bytes = peak_rss_bytes();
  return r;
}

}  // namespace

RunReport run_scenario(const Scenario& sc, const RunControls& controls) {
  std::vector<std::unique_ptr<RunChecker>> checkers = make_standard_checkers();
  if (sc.checks.determinism || controls.check_determinism) {
    // The first run writes no trace: outputs must not change the hash either.
    const RunReport first = run_once(sc, RunControls{}, make_standard_checkers(), false);
    checkers.push_back(std::make_unique<DeterminismChecker>(first.event_log_hash));
  }
  RunReport r = run_once(sc, controls, std::move(checkers), true);
  if (!sc.checks.assertions.empty()) {
    const nlohmann::json figures = to_json(r);
    for (const Assertion& a : sc.checks.assertions) {
      r.checks.push_back(NamedCheck{assertion_check_name(a), check_assertion(a, figures)});
    }
  }
  return r;
}

}  // namespace nvl::emu
