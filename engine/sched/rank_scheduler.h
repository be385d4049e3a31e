#pragma once
// Continuous batching for one rank: every step runs each running request's decode, continues chunked
// prefills, and admits waiting requests while the token budget, the running cap and free KV blocks
// allow. When decode outgrows the KV cache the newest running request is preempted (its KV dropped,
// to be recomputed later), as vLLM does.
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <memory>
#include <optional>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "engine/sched/request_state.h"
#include "engine/sched/scheduling_policy.h"
#include "engine/sched/step_plan.h"

namespace nvl::engine {

struct SchedulerConfig {
  std::int64_t token_budget = 8192;  // tokens per step, prefill and decode together
  std::int64_t max_running = 256;    // requests holding KV at once
  std::int64_t chunk_tokens = 8192;  // prefill tokens of one request per step
  std::int64_t draft_tokens = 0;     // MTP: tokens each decode step proposes beyond the first
  // Whether decodes and prefill chunks share a step (vLLM, TensorRT-LLM, SGLang --enable-mixed-chunk).
  // False: a step prefills or decodes, prefill first while any can be admitted or continued (SGLang's
  // default), so the running requests' decodes wait out each prefill step.
  bool mixed_batches = true;
};

// What a step runs: decodes and prefill chunks in one batch, or, with prefill and decode on separate SM
// partitions (green contexts), only the decodes or only the prefill chunks and admissions, each side
// planned while the other's step may still be running.
enum class StepKind { batch, decode, prefill };

// What a step delivered to one request.
struct StepOutcome {
  RequestId id = 0;
  std::int64_t new_output_tokens = 0;  // delivered this step (first token after prefill, 1 + accepted drafts)
  bool first_token = false;
  bool finished = false;
};

class RankScheduler {
 public:
  RankScheduler(KvCacheManager& kv, SchedulerConfig cfg, std::unique_ptr<SchedulingPolicy> policy);

  // The request joins the waiting queue. The scheduler keeps it until it finishes or is cancelled.
  void enqueue(RequestState request);
  // Removes a request wherever it is, freeing its KV. False when unknown.
  bool cancel(RequestId id);

  // P/D: takes KV blocks for a request whose prompt another worker prefills. nullopt (nothing taken)
  // when the cache cannot hold it now; otherwise what is already cached here (needs no transfer).
  std::optional<AdmitPlan> receive(RequestState request);
  // The transferred KV is in place: the request joins decode with its first token delivered.
  StepOutcome received(RequestId id);
  // The transfer failed for good: the request is prefilled here instead (it never disappears).
  void receive_failed(RequestId id);

  // The Grace load of an admitted request's prefix is done: it is scheduled from the next plan on.
  // False when the request is gone (cancelled, taken) or was not loading.
  bool loaded(RequestId id);
  std::size_t loading() const { return loading_; }

  // Plans the next step of that kind (and takes its KV). An empty plan means nothing can run now. A batch
  // step without mixed_batches is a prefill step when one can run, else a decode step.
  // Requests in a step still running are left out, and never preempted: their KV is in use.
  StepPlan plan_step(StepKind kind = StepKind::batch);
  // The step ran: advance every item. accepted_drafts(id) says how many MTP drafts each decode kept.
  std::vector<StepOutcome> complete_step(const StepPlan& plan,
                                         const std::function<std::int64_t(RequestId)>& accepted_drafts);

  // The step failed on the device: none of it happened, and its requests are planned again.
  void abort_step(const StepPlan& plan);
  // The rank is gone (GPU lost, reset or process crashed): every request leaves it, its KV freed, as it
  // stands (the tokens delivered so far), to go on elsewhere. In id order.
  std::vector<RequestState> take_all();

  // Frees the KV of a finished request that asked to keep it (hold_kv_after_finish). False when none is held.
  bool release_held(RequestId id);
  std::size_t held() const { return held_.size(); }

  // Whether the request could ever run here: its prompt and all its output within the whole KV cache.
  bool fits(const RequestState& r) const;

  std::size_t waiting() const { return waiting_.size(); }
  std::size_t receiving() const { return receiving_; }
  std::size_t running() const { return running_.size(); }
  bool idle() const { return waiting_.empty() && running_.empty() && receiving_ == 0; }
  // Tokens the running requests hold in KV (for load reports).
  std::int64_t tokens_in_flight() const;
  // Requests preempted on this rank since it started (vLLM's vllm:num_preemptions).
  std::uint64_t preemptions() const { return preemptions_; }
  const RequestState* find(RequestId id) const;
  const KvCacheManager& kv() const { return kv_; }

 private:
  void preempt(RequestState& r);
  bool admit(RequestState& r);
  RequestState& state(RequestId id);
  // A new request's sizes are sane and its id unused (std::invalid_argument, std::logic_error).
  void check_new(const RequestState& r) const;
  // A request that was receiving KV, which it no longer is.
  RequestState& receiving(RequestId id);

  KvCacheManager& kv_;
  SchedulerConfig cfg_;
  std::unique_ptr<SchedulingPolicy> policy_;
  std::unordered_map<RequestId, RequestState> requests_;  // looked up, never iterated
  std::deque<RequestState*> waiting_;
  std::vector<RequestState*> running_;  // admission order: the newest is preempted first
  std::size_t receiving_ = 0;
  std::size_t loading_ = 0;  // admitted requests whose prefix is loading from Grace
  std::unordered_set<RequestId> held_;  // finished, KV kept until release_held()
  std::uint64_t preemptions_ = 0;
};

}  // namespace nvl::engine
