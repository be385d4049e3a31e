#pragma once
// The emulated rack running in real time for network clients. The runtime and the deployment live on
// one thread of their own (the only one that touches engine state); HTTP and gRPC threads hand work
// in with the runtime's post() and get tokens back through the StreamSink they pass, which runs on the
// runtime thread and must only hand the update on (to a strand or a queue), never block. The same
// holds for the callbacks of read_gauges() and inject(): HTTP threads never wait on the runtime.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "emu/live/live_faults.h"
#include "emu/live/live_metrics.h"
#include "emu/live/pd_pairs.h"
#include "emu/live/prompt_estimate.h"
#include "emu/rt/real_time_runtime.h"
#include "emu/scenario/deployment.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu::live {

// A DP rank's KV cache events of one emulated instant (a step's), on the runtime thread; ts in
// emulated seconds. Must not block.
using KvEventSink = std::function<void(std::int32_t rank, double ts, std::span<const engine::KvEvent> events)>;

struct LiveOptions {
  double time_scale = 1.0;        // emulated seconds per wall second
  std::size_t max_in_flight = 1024;  // admitted requests not yet over; beyond it new ones are refused (429)
  // How long (emulated seconds) one half of a P/D pair sent to the workers waits for the other.
  double pd_pair_timeout_s = 300;
};

// What happened to a request since the last update.
struct StreamUpdate {
  std::int64_t new_tokens = 0;
  bool finished = false;
  std::string failure;  // set when it ended without finishing (a fault, a shutdown)
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;  // delivered so far
};
using StreamSink = std::function<void(const StreamUpdate&)>;

// too_long: more than a rank's KV cache holds; over_context: more than the model's context length.
enum class Refusal { none, queue_full, unhealthy, too_long, over_context };
// The HTTP status of a refusal (the gRPC frontend counts its refusals under the same codes).
inline int http_status(Refusal r) {
  switch (r) {
    case Refusal::queue_full: return 429;
    case Refusal::too_long: return 413;
    case Refusal::over_context: return 400;  // as vLLM answers a request over max_model_len
    default: return 503;
  }
}

struct Admission {
  engine::RequestId id = 0;
  Refusal refusal = Refusal::none;
  std::string detail;  // why, when refused
};

// A fault injected through the admin interface: its description once it has hit, or why not (a bad
// fault's rt::InputError naming its key, the server shutting down, the asker gave up).
struct InjectOutcome {
  std::string injected;
  std::exception_ptr error;
};

// Work handed to the runtime thread that its asker may withdraw while it still waits there: exactly
// one of take() (the runtime thread, starting on it) and withdraw() (the asker) returns true.
class EngineTicket {
 public:
  bool take() { return claim(State::taken); }
  bool withdraw() { return claim(State::withdrawn); }

 private:
  enum class State : std::uint8_t { waiting, taken, withdrawn };
  bool claim(State to) {
    State from = State::waiting;
    return state_.compare_exchange_strong(from, to);
  }
  std::atomic<State> state_{State::waiting};
};

class LiveEngine {
 public:
  // How long the blocking gauges() and inject() wait for the runtime thread (a busy or stalled rack).
  static constexpr std::chrono::milliseconds kAnswerWait{2000};

  // Builds the deployment on the runtime thread and starts serving; the scenario's workload is not
  // run. A bad deployment is the rt::InputError the deployment throws, rethrown here.
  LiveEngine(const Scenario& scenario, LiveOptions opts);
  ~LiveEngine();
  LiveEngine(const LiveEngine&) = delete;
  LiveEngine& operator=(const LiveEngine&) = delete;

  // Thread-safe. Admits a prompt of `prompt_tokens` with these block hashes, or refuses it at once.
  // `target_rank` >= 0: sent to that DP rank's own endpoint, served there (the router bypassed).
  // `pd`: one half of a P/D pair a router sent to the workers (pd_pairs.h), the decode half with its
  // target_rank; served once its other half has arrived (or failed after pd_pair_timeout_s). The
  // prefill half hears one token and its end when the prefill is done: when the decode rank has the
  // KV and delivers the first token.
  Admission submit(std::int64_t prompt_tokens, std::vector<engine::BlockHash> hashes, std::int64_t max_tokens,
                   StreamSink sink, std::int32_t target_rank = -1, std::optional<PdTarget> pd = std::nullopt);
  // Thread-safe. The same for a prompt's text, its tokens and block hashes estimated (prompt_estimate.h).
  Admission submit_text(std::string_view prompt, std::int64_t max_tokens, StreamSink sink,
                        std::int32_t target_rank = -1, std::optional<PdTarget> pd = std::nullopt);
  // Thread-safe. The request's sink hears nothing more; its KV is freed.
  void cancel(engine::RequestId id);
  // Thread-safe. The same for a request whose answer reached a stop sequence: counted as finished
  // (finished_reason "stop"), not cancelled.
  void stop_at_sequence(engine::RequestId id);
  // Thread-safe. Injects a fault (live_faults.h); `done` runs exactly once, on the runtime thread (or
  // the thread stopping it), with the outcome, and must only hand it on. The ticket withdraws the fault
  // while it still waits for the runtime thread. Null, and `done` not run, when the runtime is gone.
  std::shared_ptr<EngineTicket> inject(const nlohmann::json& fault, std::function<void(InjectOutcome)> done);
  // Thread-safe, blocking: the same, returning the description; throws the outcome's error, or a
  // std::runtime_error when the runtime thread does not take the fault within kAnswerWait (withdrawn).
  std::string inject(const nlohmann::json& fault);
  // Thread-safe. Reads the gauges on the runtime thread and hands them to `done` there (which must
  // only hand them on); false, and `done` not run, when the runtime is gone.
  bool read_gauges(std::function<void(const EngineGauges&)> done);
  // Thread-safe. The gauges last read, for a reader the runtime thread does not answer in time.
  EngineGauges last_gauges();
  // Thread-safe, blocking: read_gauges(), or last_gauges() after kAnswerWait.
  EngineGauges gauges();
  // Thread-safe. Runs `fn` on the runtime thread, where engine state may be touched; false when the
  // runtime is gone.
  bool post(std::function<void()> fn);
  // Thread-safe. Resets the prefix cache of engine `engine` (-1: every one), as vLLM's
  // /reset_prefix_cache does: its GPU tier's cached blocks go, a DP rank's in one AllBlocksCleared
  // event (a prefill instance publishes no KV events). An engine whose requests hold blocks refuses,
  // with a warning in the log, as vLLM's does. Requests submitted after this call see the reset; false
  // when the runtime is gone.
  bool reset_prefix_cache(std::int32_t engine);
  // Thread-safe. From now on every DP rank's KV events go to `sink` (on the runtime thread), batched
  // per emulated instant; requests submitted after this call are covered.
  void publish_kv_events(KvEventSink sink);
  // Thread-safe; stops the runtime and fails whatever is still in flight.
  void stop();

  bool healthy() const { return healthy_ranks_.load() > 0 && !dead_.load(); }
  // Thread-safe. Whether engine `engine` serves, as last polled: a DP rank (its GPUs healthy, its group
  // stepping it), or from ranks() on a prefill instance (its GPUs healthy, its worker not declared dead).
  bool healthy(std::int32_t engine);
  std::int32_t ranks() const { return ranks_; }
  std::int32_t prefill_instances() const { return prefill_instances_; }
  std::int64_t block_tokens() const { return block_tokens_; }
  std::int64_t max_prompt_tokens() const { return max_prompt_tokens_; }
  // The model's context length (ModelProfile::max_position_embeddings): prompt and output together.
  std::int64_t max_context_tokens() const { return max_context_tokens_; }
  const std::string& model_name() const { return model_name_; }
  std::uint64_t seed() const { return seed_; }
  LiveMetrics& metrics() { return *metrics_; }
  std::size_t in_flight() const { return in_flight_.load(); }
  // Thread-safe. Emulated seconds the rack is behind the wall clock times the time scale: the host
  // could not compute its events as fast as they fell due (0 while it keeps up). Latencies stay the
  // model's; clients see them late by lag / scale wall seconds.
  // Read at an event (a token's sink runs at one), it is how late that event ran.
  double emulation_lag_s();

 private:
  struct Live {
    StreamSink sink;
    std::int64_t prompt_tokens = 0;
    std::int64_t max_tokens = 0;
    std::int64_t output_tokens = 0;       // delivered to the client
    std::optional<rt::Time> last_token;  // emulated: when the latest tokens were delivered
  };
  void serve(const Scenario& scenario, std::promise<void>& ready);
  void on_tokens(engine::RequestId id, std::int64_t count);
  void on_done(const engine::RequestTiming& t);
  void start(engine::RequestId id, std::int64_t prompt_tokens, std::vector<engine::BlockHash> hashes,
             std::int64_t max_tokens, std::int32_t target_rank, std::int32_t target_prefill_instance = -1);
  // P/D pairs (runtime thread): a half arrives; a prefill half's part is done or failed.
  void arrive_half(PdHalf half);
  void end_prefill_half(const PdHalf& half, const engine::RequestTiming& decode, const std::string& failure);
  // Ends a request the engine never had (a half that waited), as the engine ends one.
  void end_unstarted(engine::RequestId id, std::int64_t prompt_tokens, const std::string& failure);
  // The engine stops a withdrawn request; a half of a P/D pair takes its other half with it.
  void stop_on_engine(engine::RequestId id);
  void fail_all(const std::string& why);
  // Ends the request here and in the engine, to be counted with `reason` once the engine has stopped
  // it; false when it was already over.
  bool withdraw(engine::RequestId id, FinishReason reason);
  // Counts a request that ended, as the engine it ended on counts it.
  void record_end(const engine::RequestTiming& t, const Live& l, FinishReason reason);
  bool rank_serving(std::int32_t rank) const;
  bool prefill_serving(std::size_t instance) const;
  void refresh_health();

  // Reads the runtime's lag (runtime thread) and warns once when the host starts falling behind.
  void watch_lag(const rt::RealTimeRuntime& rt);
  EngineGauges gauges_now();

  LiveOptions opts_;
  std::optional<LiveMetrics> metrics_;  // shaped by the deployment, before any request
  std::string model_name_;
  std::uint64_t seed_ = 1;
  std::int64_t block_tokens_ = 64;
  std::int64_t max_prompt_tokens_ = 0;
  std::int64_t max_context_tokens_ = 0;
  rt::RealTimeRuntime* rt_ = nullptr;  // guarded by rt_mu_ (posting); set while the runtime runs
  Deployment* deployment_ = nullptr;   // runtime thread only
  LiveFaults* faults_ = nullptr;       // runtime thread only
  std::mutex rt_mu_;
  // Admitted requests not yet over, by id: every one hears exactly one final update.
  std::mutex live_mu_;
  std::map<engine::RequestId, Live> live_;
  // Withdrawn by their clients (cancelled, or ended at a stop sequence) until the engine has stopped them.
  std::map<engine::RequestId, std::pair<FinishReason, Live>> withdrawn_;
  engine::RequestId next_id_ = 1;  // guarded by live_mu_
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<std::int64_t> healthy_ranks_{0};
  std::int32_t ranks_ = 0;
  std::int32_t prefill_instances_ = 0;
  std::mutex health_mu_;
  std::vector<bool> engine_healthy_;  // guarded by health_mu_: by engine (DP ranks, prefill instances), as last polled
  PdPairs pd_pairs_;                  // runtime thread only
  KvEventSink kv_sink_;                                    // runtime thread only
  std::vector<std::vector<engine::KvEvent>> kv_batches_;  // runtime thread only: by rank, not yet handed on
  bool lagging_ = false;  // runtime thread only: a falling-behind warning was logged and not yet cleared
  std::atomic<bool> dead_{false};
  std::mutex gauges_mu_;
  EngineGauges last_gauges_;
  std::thread thread_;
};

}  // namespace nvl::emu::live
