#include "emu/live/live_engine.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

namespace nvl::emu::live {

namespace {

// How often (wall seconds) the ranks' health is read for admission and /health: ranks also come back
// on their own (a GPU reset, a worker restart).
constexpr double kHealthPollWallS = 0.02;
// Wall seconds of lag that start a warning, and that end it (hysteresis, so a host near the edge does
// not flood the log).
constexpr double kLagWarnWallS = 0.05;
constexpr double kLagClearWallS = 0.01;

// Hands an outcome on exactly once: what the runtime thread gives it, or, when it is dropped
// unanswered (the fault withdrawn, the runtime stopped before getting to it), an error saying so.
class OnceReply {
 public:
  explicit OnceReply(std::function<void(InjectOutcome)> done) : done_(std::move(done)) {}
  OnceReply(const OnceReply&) = delete;
  OnceReply& operator=(const OnceReply&) = delete;
  ~OnceReply() {
    if (done_) {
      done_(InjectOutcome{"", std::make_exception_ptr(std::runtime_error("the fault was not injected: the server "
                                                                             "is shutting down or gave up waiting"))});
    }
  }
  void answer(InjectOutcome o) { std::exchange(done_, nullptr)(std::move(o)); }
  // The asker learns the outcome some other way: nothing is handed on.
  void forget() { done_ = nullptr; }

 private:
  std::function<void(InjectOutcome)> done_;
};

}  // namespace

LiveEngine::LiveEngine(const Scenario& scenario, LiveOptions opts) : opts_(opts), seed_(scenario.seed) {
  std::promise<void> ready;
  std::future<void> built = ready.get_future();
  thread_ = std::thread([this, &scenario, &ready] { serve(scenario, ready); });
  try {
    built.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

LiveEngine::~LiveEngine() { stop(); }

void LiveEngine::serve(const Scenario& scenario, std::promise<void>& ready) {
  std::optional<rt::RealTimeRuntime> rt;
  std::unique_ptr<Deployment> deployment;
  std::unique_ptr<LiveFaults> faults;
  try {
    rt.emplace(rt::LoopOptions{.seed = scenario.seed}, opts_.time_scale);
    deployment = std::make_unique<Deployment>(
        *rt, scenario, [this](engine::RequestId id, std::int64_t count, bool, bool) { on_tokens(id, count); },
        [this](const engine::RequestTiming& t) { on_done(t); });
    model_name_ = deployment->model().name;
    block_tokens_ = deployment->kv_block_tokens();
    // The longest context one normal rank's KV cache can hold.
    max_prompt_tokens_ = deployment->system().kv(0).gpu().capacity() * block_tokens_;
    max_context_tokens_ = deployment->model().max_position_embeddings;
    ranks_ = deployment->system().ranks();
    prefill_instances_ = static_cast<std::int32_t>(deployment->system().prefill_instances());
    metrics_.emplace(MetricsShape{.engines = ranks_ + prefill_instances_,
                                  .max_model_len = max_context_tokens_,
                                  .block_tokens = block_tokens_});
    deployment_ = deployment.get();
    faults = std::make_unique<LiveFaults>(*rt, scenario, *deployment);
    faults_ = faults.get();
    refresh_health();
    std::lock_guard<std::mutex> lock(rt_mu_);
    rt_ = &*rt;
  } catch (...) {
    ready.set_exception(std::current_exception());
    return;
  }
  ready.set_value();
  std::function<void()> poll_health = [&] {
    refresh_health();
    watch_lag(*rt);
    rt->call_after(rt::from_seconds(kHealthPollWallS * opts_.time_scale), poll_health);
  };
  try {
    poll_health();
    rt::RunOptions run;
    run.serve = true;
    rt->run(run);
  } catch (const std::exception& e) {
    spdlog::error("live: the emulated rack stopped: {}", e.what());
    dead_ = true;
    fail_all(std::string("the emulated rack stopped: ") + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(rt_mu_);
    rt_ = nullptr;
  }
  dead_ = true;
  fail_all("server shutting down");
  faults_ = nullptr;
  faults.reset();
  deployment_ = nullptr;
  deployment.reset();
  rt.reset();
}

bool LiveEngine::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(rt_mu_);
  if (rt_ == nullptr) return false;
  rt_->post(std::move(fn));
  return true;
}

Admission LiveEngine::submit(std::int64_t prompt_tokens, std::vector<engine::BlockHash> hashes,
                             std::int64_t max_tokens, StreamSink sink, std::int32_t target_rank,
                             std::optional<PdTarget> pd) {
  Admission a;
  if (!healthy()) {
    a.refusal = Refusal::unhealthy;
    a.detail = "no healthy worker: every normal rank's GPU has failed";
    return a;
  }
  if (target_rank >= 0 && !healthy(target_rank)) {
    a.refusal = Refusal::unhealthy;
    a.detail = "DP rank " + std::to_string(target_rank) + " is not serving (a fault took its GPUs or its worker)";
    return a;
  }
  if (pd && !healthy(ranks_ + pd->prefill_instance)) {
    a.refusal = Refusal::unhealthy;
    a.detail = "prefill instance " + std::to_string(pd->prefill_instance) +
               " is not serving (a fault took its GPUs or its worker)";
    return a;
  }
  if (prompt_tokens + max_tokens > max_context_tokens_) {
    // vLLM's wording, which clients match on.
    a.refusal = Refusal::over_context;
    a.detail = "This model's maximum context length is " + std::to_string(max_context_tokens_) +
               " tokens. However, you requested " + std::to_string(prompt_tokens + max_tokens) + " tokens (" +
               std::to_string(prompt_tokens) + " in the messages, " + std::to_string(max_tokens) +
               " in the completion). Please reduce the length of the messages or completion.";
    return a;
  }
  if (prompt_tokens + max_tokens > max_prompt_tokens_) {
    a.refusal = Refusal::too_long;
    a.detail = "this request needs " + std::to_string(prompt_tokens + max_tokens) + " tokens (" +
               std::to_string(prompt_tokens) + " in the prompt, " + std::to_string(max_tokens) +
               " to generate), more than the " + std::to_string(max_prompt_tokens_) + " a rank's KV cache holds";
    return a;
  }
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    if (live_.size() >= opts_.max_in_flight) {
      a.refusal = Refusal::queue_full;
      a.detail = "the server already has " + std::to_string(live_.size()) + " requests in flight (the limit)";
      return a;
    }
    a.id = next_id_++;
    Live& l = live_[a.id];
    l.sink = std::move(sink);
    l.prompt_tokens = prompt_tokens;
    l.max_tokens = max_tokens;
    in_flight_ = live_.size();
  }
  const engine::RequestId id = a.id;
  if (!post([this, id, prompt_tokens, hashes = std::move(hashes), max_tokens, target_rank, pd]() mutable {
        if (pd) {
          arrive_half(PdHalf{id, *pd, target_rank, prompt_tokens, std::move(hashes), max_tokens, rt_->now()});
        } else {
          start(id, prompt_tokens, std::move(hashes), max_tokens, target_rank);
        }
      })) {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_.erase(id);
    in_flight_ = live_.size();
    a.refusal = Refusal::unhealthy;
    a.detail = "the server is shutting down";
  }
  return a;
}

Admission LiveEngine::submit_text(std::string_view prompt, std::int64_t max_tokens, StreamSink sink,
                                  std::int32_t target_rank, std::optional<PdTarget> pd) {
  PromptEstimate e = estimate_prompt(prompt, block_tokens_);
  return submit(e.tokens, std::move(e.block_hashes), max_tokens, std::move(sink), target_rank, pd);
}

void LiveEngine::start(engine::RequestId id, std::int64_t prompt_tokens, std::vector<engine::BlockHash> hashes,
                       std::int64_t max_tokens, std::int32_t target_rank, std::int32_t target_prefill_instance) {
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    if (!live_.contains(id)) return;  // cancelled before it reached the engine
  }
  engine::RequestState r;
  r.id = id;
  r.arrival = rt_->now();
  r.prompt_tokens = prompt_tokens;
  r.prompt_hashes = std::move(hashes);
  r.max_output_tokens = max_tokens;
  r.target_rank = target_rank;
  r.target_prefill_instance = target_prefill_instance;
  try {
    deployment_->system().submit(std::move(r));
  } catch (const std::exception& e) {
    end_unstarted(id, prompt_tokens, std::string("refused by the engine: ") + e.what());
  }
}

void LiveEngine::arrive_half(PdHalf half) {
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    if (!live_.contains(half.id)) return;  // cancelled before it got here
  }
  const engine::RequestId id = half.id;
  const std::int64_t prompt_tokens = half.prompt_tokens;
  const PdTarget target = half.target;
  const std::string room = "bootstrap room " + std::to_string(target.room) + " of prefill instance " +
                           std::to_string(target.prefill_instance);
  PdHalf other;
  switch (pd_pairs_.arrive(std::move(half), other)) {
    case PdPairs::Met::duplicate:
      end_unstarted(id, prompt_tokens, room + " already has its " + (target.prefill_half ? "prefill" : "decode") + " half");
      return;
    case PdPairs::Met::waiting:
      rt_->call_after(rt::from_seconds(opts_.pd_pair_timeout_s), [this, id, prompt_tokens, room] {
        if (pd_pairs_.leave(id)) {
          end_unstarted(id, prompt_tokens,
                        "the other half of its P/D pair (" + room + ") did not arrive within " +
                            std::to_string(opts_.pd_pair_timeout_s) + " s");
        }
      });
      return;
    case PdPairs::Met::paired: {
      // Served as the decode half asked: its prompt, its rank, the prefill instance both named.
      PdHalf decode = other.target.prefill_half ? *pd_pairs_.partner(other.id) : std::move(other);
      start(decode.id, decode.prompt_tokens, std::move(decode.hashes), decode.max_tokens, decode.rank,
            decode.target.prefill_instance);
      return;
    }
  }
}

void LiveEngine::end_prefill_half(const PdHalf& half, const engine::RequestTiming& decode, const std::string& failure) {
  StreamSink sink;
  Live l;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    if (const auto it = live_.find(half.id); it != live_.end()) {
      l = std::move(it->second);
      live_.erase(it);
      in_flight_ = live_.size();
      sink = std::exchange(l.sink, nullptr);
    } else if (withdrawn_.erase(half.id) == 0) {
      return;
    }
  }
  // The prefill worker counts the request it was sent, as vLLM's engine of that instance would.
  const std::int32_t engine = ranks_ + half.target.prefill_instance;
  const double since_arrival = std::max(0.0, (rt_->now() - half.arrival).seconds());
  FinishedRequest f;
  f.engine = engine;
  f.reason = failure.empty() ? FinishReason::length : FinishReason::error;
  f.e2e_s = since_arrival;
  f.prompt_tokens = half.prompt_tokens;
  f.max_tokens = half.max_tokens;
  if (failure.empty()) {
    f.queue_s = std::max(0.0, (decode.routed - half.arrival).seconds());
    f.prefill_s = f.inference_s = std::max(0.0, f.e2e_s - f.queue_s);
    f.output_tokens = 1;
    metrics_->record_first_token(engine, since_arrival, half.prompt_tokens, decode.cached_tokens, 1);
  }
  metrics_->record_finished(f);
  if (!sink) return;  // withdrawn: its client heard the end already
  StreamUpdate u;
  u.new_tokens = f.output_tokens;
  u.output_tokens = f.output_tokens;
  u.prompt_tokens = half.prompt_tokens;
  u.finished = true;
  u.failure = failure;
  sink(u);
}

void LiveEngine::end_unstarted(engine::RequestId id, std::int64_t prompt_tokens, const std::string& failure) {
  engine::RequestTiming t;
  t.id = id;
  t.prompt_tokens = prompt_tokens;
  t.failure = failure;
  on_done(t);
}

void LiveEngine::on_tokens(engine::RequestId id, std::int64_t count) {
  const rt::Time now = rt_->now();
  StreamSink sink;
  StreamUpdate u;
  std::optional<rt::Time> previous;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    const auto it = live_.find(id);
    if (it == live_.end()) return;
    Live& l = it->second;
    l.output_tokens += count;
    previous = std::exchange(l.last_token, now);
    u.new_tokens = count;
    u.prompt_tokens = l.prompt_tokens;
    u.output_tokens = l.output_tokens;
    sink = l.sink;
  }
  // The engine that delivered them: the rank the request is on now.
  const engine::RequestTiming* t = deployment_->system().timing(id);
  if (t != nullptr && t->rank >= 0) {
    if (previous) {
      metrics_->record_tokens(t->rank, count, (now - *previous).seconds());
    } else {
      metrics_->record_first_token(t->rank, (now - t->arrival).seconds(), t->prompt_tokens, t->cached_tokens,
                                   count);
    }
  }
  sink(u);
  // The decode rank has the prompt's KV and its first token: the prefill half's part is done.
  if (const auto prefill = pd_pairs_.partner(id); prefill && t != nullptr) {
    pd_pairs_.end(id);
    end_prefill_half(*prefill, *t, "");
  }
}

void LiveEngine::on_done(const engine::RequestTiming& t) {
  if (const auto prefill = pd_pairs_.partner(t.id)) {
    pd_pairs_.end(t.id);
    end_prefill_half(*prefill, t, t.failure.empty() ? "its decode half ended before the prefill was done" : t.failure);
  }
  StreamSink sink;
  StreamUpdate u;
  Live ended;
  FinishReason reason = t.failure.empty() ? FinishReason::length : FinishReason::error;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    if (const auto it = live_.find(t.id); it != live_.end()) {
      ended = std::move(it->second);
      live_.erase(it);
      in_flight_ = live_.size();
      sink = std::exchange(ended.sink, nullptr);
    } else if (const auto w = withdrawn_.find(t.id); w != withdrawn_.end()) {
      reason = w->second.first;
      ended = std::move(w->second.second);
      withdrawn_.erase(w);
    } else {
      return;
    }
  }
  record_end(t, ended, reason);
  if (!sink) return;  // withdrawn: its client heard the end already
  u.prompt_tokens = ended.prompt_tokens;
  u.output_tokens = ended.output_tokens;
  u.finished = true;
  u.failure = t.failure;
  sink(u);
}

void LiveEngine::record_end(const engine::RequestTiming& t, const Live& l, FinishReason reason) {
  if (t.rank < 0) {
    if (reason == FinishReason::error) metrics_->record_failed_unrouted();
    return;  // cancelled before any engine had it
  }
  const auto seconds = [](rt::Time from, const std::optional<rt::Time>& to) {
    return to ? std::max(0.0, (*to - from).seconds()) : 0.0;
  };
  FinishedRequest f;
  f.engine = t.rank;
  f.reason = reason;
  f.e2e_s = seconds(t.arrival, t.finished);
  f.queue_s = t.queue().seconds();
  f.prefill_s = seconds(t.routed, t.first_token);
  f.decode_s = t.first_token ? seconds(*t.first_token, l.last_token) : 0.0;
  f.inference_s = seconds(t.routed, l.last_token);
  f.prompt_tokens = t.prompt_tokens;
  f.output_tokens = l.output_tokens;
  f.max_tokens = l.max_tokens;
  metrics_->record_finished(f);
}

void LiveEngine::cancel(engine::RequestId id) {
  if (withdraw(id, FinishReason::abort)) metrics_->record_cancelled();
}

void LiveEngine::stop_at_sequence(engine::RequestId id) { withdraw(id, FinishReason::stop); }

bool LiveEngine::withdraw(engine::RequestId id, FinishReason reason) {
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    const auto it = live_.find(id);
    if (it == live_.end()) return false;
    it->second.sink = nullptr;
    withdrawn_.emplace(id, std::make_pair(reason, std::move(it->second)));
    live_.erase(it);
    in_flight_ = live_.size();
  }
  post([this, id] { stop_on_engine(id); });
  return true;
}

void LiveEngine::stop_on_engine(engine::RequestId id) {
  if (pd_pairs_.leave(id)) {  // a half still waiting: the engine never had it
    end_unstarted(id, 0, "cancelled");
    return;
  }
  engine::RequestId on_engine = id;
  if (const auto decode = pd_pairs_.partner(id); decode && !decode->target.prefill_half) {
    // A prefill half whose decode half is being served: the decode rank gets no KV from it now, so the
    // decode half fails too (as an aborted prefill fails its KV transfer).
    pd_pairs_.end(id);
    end_unstarted(id, 0, "cancelled");
    on_engine = decode->id;
    StreamSink sink;
    StreamUpdate u;
    {
      std::lock_guard<std::mutex> lock(live_mu_);
      const auto it = live_.find(on_engine);
      if (it == live_.end()) return;
      sink = std::exchange(it->second.sink, nullptr);
      u.prompt_tokens = it->second.prompt_tokens;
      u.output_tokens = it->second.output_tokens;
      withdrawn_.emplace(on_engine, std::make_pair(FinishReason::error, std::move(it->second)));
      live_.erase(it);
      in_flight_ = live_.size();
    }
    u.finished = true;
    u.failure = "its prefill half (bootstrap room " + std::to_string(decode->target.room) + ") was cancelled";
    sink(u);
  }
  try {
    deployment_->system().cancel(on_engine);
  } catch (const std::exception& e) {
    spdlog::warn("live: cancelling request {}: {}", on_engine, e.what());
  }
}

std::shared_ptr<EngineTicket> LiveEngine::inject(const nlohmann::json& fault, std::function<void(InjectOutcome)> done) {
  auto ticket = std::make_shared<EngineTicket>();
  auto reply = std::make_shared<OnceReply>(std::move(done));
  if (!post([this, fault, ticket, reply] {
        if (!ticket->take()) return;
        try {
          faults_->inject(fault, [this, reply](const std::string& what) {
            refresh_health();
            metrics_->record_fault();
            reply->answer(InjectOutcome{what, nullptr});
          });
        } catch (...) {
          reply->answer(InjectOutcome{"", std::current_exception()});
        }
      })) {
    reply->forget();  // the null ticket says it
    return nullptr;
  }
  return ticket;
}

std::string LiveEngine::inject(const nlohmann::json& fault) {
  auto answer = std::make_shared<std::promise<InjectOutcome>>();
  std::future<InjectOutcome> result = answer->get_future();
  const auto ticket = inject(fault, [answer](InjectOutcome o) { answer->set_value(std::move(o)); });
  if (!ticket) throw std::runtime_error("the server is shutting down");
  if (result.wait_for(kAnswerWait) != std::future_status::ready && ticket->withdraw()) {
    throw std::runtime_error("the emulated rack did not take the fault within " + std::to_string(kAnswerWait.count()) +
                             " ms (its runtime thread is busy); it was not injected");
  }
  // Taken: it hits at once, or the stopping runtime answers that it did not.
  InjectOutcome o = result.get();
  if (o.error) std::rethrow_exception(o.error);
  return o.injected;
}

bool LiveEngine::rank_serving(std::int32_t rank) const {
  const engine::PdSystem& system = deployment_->system();
  // A rank serves when its GPUs are healthy and its group still steps it (not removed after a fault,
  // its worker not crashed and restarting).
  for (const hal::DeviceId gpu : system.group_of(rank).devices_of(system.local_rank(rank))) {
    if (deployment_->cluster().fleet().device(gpu).health() != hal::DeviceHealth::healthy) return false;
  }
  return system.rank_live(rank);
}

bool LiveEngine::prefill_serving(std::size_t instance) const {
  engine::PdSystem& system = deployment_->system();
  engine::PrefillWorker& worker = system.prefill(instance);
  for (std::int64_t stage = 0; stage < worker.pp(); ++stage) {
    for (std::int32_t r = 0; r < worker.ranks(); ++r) {
      for (const hal::Device* gpu : worker.devices_of(stage, r)) {
        if (gpu->health() != hal::DeviceHealth::healthy) return false;
      }
    }
  }
  return worker.live() && !system.prefill_worker_down(instance);
}

void LiveEngine::refresh_health() {
  std::vector<bool> serving;
  for (std::int32_t r = 0; r < ranks_; ++r) serving.push_back(rank_serving(r));
  healthy_ranks_ = std::count(serving.begin(), serving.end(), true);
  for (std::int32_t p = 0; p < prefill_instances_; ++p) serving.push_back(prefill_serving(static_cast<std::size_t>(p)));
  std::lock_guard<std::mutex> lock(health_mu_);
  engine_healthy_ = std::move(serving);
}

bool LiveEngine::healthy(std::int32_t engine) {
  std::lock_guard<std::mutex> lock(health_mu_);
  return !dead_.load() && engine >= 0 && static_cast<std::size_t>(engine) < engine_healthy_.size() &&
         engine_healthy_[static_cast<std::size_t>(engine)];
}

bool LiveEngine::reset_prefix_cache(std::int32_t engine) {
  return post([this, engine] {
    const auto reset = [](engine::KvCacheManager& kv, const std::string& who) {
      if (!kv.reset_prefix_cache()) {
        spdlog::warn("live: {}: prefix cache not reset: {} blocks are in use by its requests", who, kv.gpu().used_blocks());
      }
    };
    engine::PdSystem& system = deployment_->system();
    for (std::int32_t r = 0; r < ranks_; ++r) {
      if (engine < 0 || r == engine) reset(system.kv(r), "DP rank " + std::to_string(r));
    }
    for (std::int32_t p = 0; p < prefill_instances_; ++p) {
      if (engine >= 0 && ranks_ + p != engine) continue;
      engine::PrefillWorker& worker = system.prefill(static_cast<std::size_t>(p));
      for (std::int32_t r = 0; r < worker.ranks(); ++r) reset(worker.kv(r), "prefill instance " + std::to_string(p));
    }
  });
}

void LiveEngine::publish_kv_events(KvEventSink sink) {
  post([this, sink = std::move(sink)]() mutable {
    kv_sink_ = std::move(sink);
    engine::PdSystem& system = deployment_->system();
    kv_batches_.assign(static_cast<std::size_t>(system.ranks()), {});
    for (std::int32_t r = 0; r < system.ranks(); ++r) {
      system.kv(r).subscribe([this, r](const engine::KvEvent& e) {
        std::vector<engine::KvEvent>& batch = kv_batches_[static_cast<std::size_t>(r)];
        // The first event of an instant sends the batch once the instant's events are in (a step's).
        if (batch.empty()) {
          rt_->call_after(rt::Duration(), [this, r] {
            const std::vector<engine::KvEvent> events = std::exchange(kv_batches_[static_cast<std::size_t>(r)], {});
            kv_sink_(r, rt_->now().since_start().seconds(), events);
          });
        }
        batch.push_back(e);
      });
    }
  });
}

void LiveEngine::watch_lag(const rt::RealTimeRuntime& rt) {
  const std::int64_t lag_ns = rt.lag().ns();
  const double wall_s = static_cast<double>(lag_ns) * 1e-9 / rt.scale();
  if (!lagging_ && wall_s > kLagWarnWallS) {
    lagging_ = true;
    spdlog::warn("live: emulated time is {:.3f} s behind the wall clock x {}: the host cannot compute the rack's "
                 "events as fast as they fall due; latencies stay the model's, clients see them {:.0f} ms late "
                 "(a lower --time-scale keeps up)",
                 static_cast<double>(lag_ns) * 1e-9, rt.scale(), wall_s * 1e3);
  } else if (lagging_ && wall_s < kLagClearWallS) {
    lagging_ = false;
    spdlog::info("live: emulated time caught up with the wall clock");
  }
}

double LiveEngine::emulation_lag_s() {
  std::lock_guard<std::mutex> lock(rt_mu_);
  return rt_ != nullptr ? static_cast<double>(rt_->lag().ns()) * 1e-9 : 0.0;
}

EngineGauges LiveEngine::gauges_now() {
  refresh_health();
  EngineGauges g;
  engine::PdSystem& system = deployment_->system();
  std::int64_t used = 0, capacity = 0;
  for (std::int32_t r = 0; r < system.ranks(); ++r) {
    const engine::RankScheduler& s = system.scheduler(r);
    const engine::KvBlockPool& blocks = system.kv(r).gpu();
    RankGauges& rank = g.engines.emplace_back();
    rank.running = static_cast<std::int64_t>(s.running());
    rank.waiting = static_cast<std::int64_t>(s.waiting() + s.receiving());
    rank.gpu_blocks = blocks.capacity();
    rank.kv_usage = blocks.capacity() > 0 ? static_cast<double>(blocks.used_blocks()) / static_cast<double>(blocks.capacity()) : 0.0;
    rank.preemptions = s.preemptions();
    rank.healthy = healthy(r);  // as refresh_health() just read it
    g.running += rank.running;
    g.waiting += rank.waiting;
    used += blocks.used_blocks();
    capacity += blocks.capacity();
  }
  for (std::int32_t p = 0; p < prefill_instances_; ++p) {
    engine::PrefillWorker& worker = system.prefill(static_cast<std::size_t>(p));
    RankGauges& prefill = g.engines.emplace_back();
    std::int64_t prefill_used = 0;
    for (std::int32_t r = 0; r < worker.ranks(); ++r) {
      prefill.running += static_cast<std::int64_t>(worker.scheduler(r).running());
      prefill.waiting += static_cast<std::int64_t>(worker.scheduler(r).waiting());
      prefill.preemptions += worker.scheduler(r).preemptions();
      prefill.gpu_blocks += worker.kv(r).gpu().capacity();
      prefill_used += worker.kv(r).gpu().used_blocks();
    }
    prefill.waiting += pd_pairs_.waiting_prefills(p);
    prefill.kv_usage = prefill.gpu_blocks > 0 ? static_cast<double>(prefill_used) / static_cast<double>(prefill.gpu_blocks) : 0.0;
    prefill.healthy = healthy(ranks_ + p);
    prefill.prefill = true;
    prefill.prompts_prefilled = system.prefilled_by(static_cast<std::size_t>(p));
  }
  g.router_queue = static_cast<std::int64_t>(system.pending());
  g.waiting += g.router_queue;
  g.kv_usage = capacity > 0 ? static_cast<double>(used) / static_cast<double>(capacity) : 0.0;
  g.healthy_ranks = healthy_ranks_.load();
  g.total_ranks = system.ranks();
  g.emulation_lag_s = emulation_lag_s();
  return g;
}

bool LiveEngine::read_gauges(std::function<void(const EngineGauges&)> done) {
  return post([this, done = std::move(done)] {
    const EngineGauges g = gauges_now();
    {
      std::lock_guard<std::mutex> lock(gauges_mu_);
      last_gauges_ = g;
    }
    done(g);
  });
}

EngineGauges LiveEngine::last_gauges() {
  std::lock_guard<std::mutex> lock(gauges_mu_);
  EngineGauges g = last_gauges_;
  g.healthy_ranks = healthy() ? g.healthy_ranks : 0;
  g.emulation_lag_s = emulation_lag_s();
  return g;
}

EngineGauges LiveEngine::gauges() {
  auto answer = std::make_shared<std::promise<EngineGauges>>();
  std::future<EngineGauges> result = answer->get_future();
  if (read_gauges([answer](const EngineGauges& g) { answer->set_value(g); }) &&
      result.wait_for(kAnswerWait) == std::future_status::ready) {
    return result.get();
  }
  return last_gauges();
}

void LiveEngine::fail_all(const std::string& why) {
  std::map<engine::RequestId, Live> gone;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    gone.swap(live_);
    withdrawn_.clear();
    in_flight_ = 0;
  }
  for (auto& [id, l] : gone) {
    StreamUpdate u;
    u.finished = true;
    u.failure = why;
    u.prompt_tokens = l.prompt_tokens;
    u.output_tokens = l.output_tokens;
    l.sink(u);
  }
}

void LiveEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(rt_mu_);
    if (rt_ != nullptr) rt_->stop();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

}  // namespace nvl::emu::live
