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
    metrics_.emplace(MetricsShape{.engines = deployment->system().ranks(),
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
                             std::int64_t max_tokens, StreamSink sink, std::int32_t target_rank) {
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
  if (!post([this, id, prompt_tokens, hashes = std::move(hashes), max_tokens, target_rank]() mutable {
        start(id, prompt_tokens, std::move(hashes), max_tokens, target_rank);
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
                                  std::int32_t target_rank) {
  PromptEstimate e = estimate_prompt(prompt, block_tokens_);
  return submit(e.tokens, std::move(e.block_hashes), max_tokens, std::move(sink), target_rank);
}

void LiveEngine::start(engine::RequestId id, std::int64_t prompt_tokens, std::vector<engine::BlockHash> hashes,
                       std::int64_t max_tokens, std::int32_t target_rank) {
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
  try {
    deployment_->system().submit(std::move(r));
  } catch (const std::exception& e) {
    engine::RequestTiming t;
    t.id = id;
    t.prompt_tokens = prompt_tokens;
    t.failure = std::string("refused by the engine: ") + e.what();
    on_done(t);
  }
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
  if (const engine::RequestTiming* t = deployment_->system().timing(id); t != nullptr && t->rank >= 0) {
    if (previous) {
      metrics_->record_tokens(t->rank, count, (now - *previous).seconds());
    } else {
      metrics_->record_first_token(t->rank, (now - t->arrival).seconds(), t->prompt_tokens, t->cached_tokens,
                                   count);
    }
  }
  sink(u);
}

void LiveEngine::on_done(const engine::RequestTiming& t) {
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
  post([this, id] {
    try {
      deployment_->system().cancel(id);
    } catch (const std::exception& e) {
      spdlog::warn("live: cancelling request {}: {}", id, e.what());
    }
  });
  return true;
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

void LiveEngine::refresh_health() {
  std::vector<bool> serving;
  for (std::int32_t r = 0; r < deployment_->system().ranks(); ++r) serving.push_back(rank_serving(r));
  healthy_ranks_ = std::count(serving.begin(), serving.end(), true);
  std::lock_guard<std::mutex> lock(health_mu_);
  rank_healthy_ = std::move(serving);
}

bool LiveEngine::healthy(std::int32_t rank) {
  std::lock_guard<std::mutex> lock(health_mu_);
  return !dead_.load() && rank >= 0 && static_cast<std::size_t>(rank) < rank_healthy_.size() &&
         rank_healthy_[static_cast<std::size_t>(rank)];
}

bool LiveEngine::reset_prefix_cache(std::int32_t rank) {
  return post([this, rank] {
    engine::PdSystem& system = deployment_->system();
    for (std::int32_t r = 0; r < system.ranks(); ++r) {
      if ((rank < 0 || r == rank) && !system.kv(r).reset_prefix_cache()) {
        spdlog::warn("live: DP rank {}: prefix cache not reset: {} blocks are in use by its requests", r,
                     system.kv(r).gpu().used_blocks());
      }
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
    RankGauges& rank = g.ranks.emplace_back();
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
