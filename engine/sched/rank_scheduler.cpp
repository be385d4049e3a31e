#include "engine/sched/rank_scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

RankScheduler::RankScheduler(KvCacheManager& kv, SchedulerConfig cfg, std::unique_ptr<SchedulingPolicy> policy)
    : kv_(kv), cfg_(cfg), policy_(std::move(policy)) {
  if (cfg_.token_budget < 1 + cfg_.draft_tokens || cfg_.max_running < 1 || cfg_.chunk_tokens < 1 ||
      cfg_.draft_tokens < 0) {
    throw std::invalid_argument("scheduler: token budget must fit one decode (1 + drafts), running cap and chunk >= 1");
  }
  if (!policy_) policy_ = std::make_unique<FcfsPolicy>();
}

RequestState& RankScheduler::state(RequestId id) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) throw std::logic_error("scheduler: unknown request " + std::to_string(id));
  return it->second;
}

const RequestState* RankScheduler::find(RequestId id) const {
  const auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

void RankScheduler::check_new(const RequestState& r) const {
  if (r.prompt_tokens < 1 || r.max_output_tokens < 1) {
    throw std::invalid_argument("scheduler: request " + std::to_string(r.id) +
                                " needs at least one prompt token and one output token");
  }
  if (requests_.contains(r.id)) throw std::logic_error("scheduler: request " + std::to_string(r.id) + " given twice");
}

RequestState& RankScheduler::receiving(RequestId id) {
  RequestState& r = state(id);
  if (r.phase != RequestState::Phase::receiving) {
    throw std::logic_error("scheduler: request " + std::to_string(id) + " was not receiving KV");
  }
  --receiving_;
  return r;
}

void RankScheduler::enqueue(RequestState request) {
  check_new(request);
  const RequestId id = request.id;
  request.phase = RequestState::Phase::waiting;
  waiting_.push_back(&requests_.emplace(id, std::move(request)).first->second);
}

bool RankScheduler::cancel(RequestId id) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return false;
  RequestState* r = &it->second;
  if (r->in_step) {
    r->cancelled = true;  // its step is running on the GPU: dropped when the step completes
    return true;
  }
  if (kv_.holds(id)) kv_.release(id);
  if (r->phase == RequestState::Phase::receiving) --receiving_;
  if (r->kv_loading) --loading_;
  std::erase(waiting_, r);
  std::erase(running_, r);
  requests_.erase(it);
  return true;
}

bool RankScheduler::release_held(RequestId id) {
  if (held_.erase(id) == 0) return false;
  kv_.release(id);
  return true;
}

bool RankScheduler::fits(const RequestState& r) const {
  return kv_.blocks_for(r.prompt_tokens + r.max_output_tokens) <= kv_.gpu().capacity();
}

std::optional<AdmitPlan> RankScheduler::receive(RequestState request) {
  check_new(request);
  // The decode step after the transfer writes one more token: room for it is taken now.
  const auto plan = kv_.admit(request.id, request.prompt_hashes, request.prompt_tokens + 1);
  if (!plan) return std::nullopt;
  const RequestId id = request.id;
  request.phase = RequestState::Phase::receiving;
  request.cached_tokens = plan->gpu_hit_tokens + plan->grace_hit_tokens;
  request.computed_tokens = request.cached_tokens;
  requests_.emplace(id, std::move(request));
  ++receiving_;
  return plan;
}

StepOutcome RankScheduler::received(RequestId id) {
  RequestState& r = receiving(id);
  r.computed_tokens = r.prompt_tokens;
  kv_.publish(id, r.prompt_hashes, r.prompt_tokens);
  r.output_tokens = 1;  // the prefill worker sampled the first token
  StepOutcome o{id, 1, true, r.done()};
  if (o.finished) {
    kv_.release(id);
    requests_.erase(id);
    return o;
  }
  r.phase = RequestState::Phase::decode;
  running_.push_back(&r);
  return o;
}

void RankScheduler::receive_failed(RequestId id) {
  RequestState& r = receiving(id);
  kv_.release(id);
  r.phase = RequestState::Phase::waiting;
  r.computed_tokens = 0;
  waiting_.push_front(&r);
}

std::int64_t RankScheduler::tokens_in_flight() const {
  std::int64_t n = 0;
  for (const RequestState* r : running_) n += r->computed_tokens;
  return n;
}

bool RankScheduler::admit(RequestState& r) {
  const auto plan = kv_.admit(r.id, r.prompt_hashes, r.prefill_target());
  if (!plan) return false;
  r.cached_tokens = plan->gpu_hit_tokens + plan->grace_hit_tokens;
  r.computed_tokens = r.cached_tokens;
  r.phase = RequestState::Phase::prefill;
  r.kv_loading = plan->grace_hit_tokens > 0;
  if (r.kv_loading) ++loading_;
  return true;
}

bool RankScheduler::loaded(RequestId id) {
  const auto it = requests_.find(id);
  if (it == requests_.end() || !it->second.kv_loading) return false;
  it->second.kv_loading = false;
  --loading_;
  return true;
}

void RankScheduler::preempt(RequestState& r) {
  kv_.release(r.id);
  r.phase = RequestState::Phase::waiting;
  r.computed_tokens = 0;
  ++r.preemptions;
  ++preemptions_;
  std::erase(running_, &r);
  waiting_.push_front(&r);
}

StepPlan RankScheduler::plan_step(StepKind kind) {
  if (kind == StepKind::batch && !cfg_.mixed_batches) {
    StepPlan prefill = plan_step(StepKind::prefill);
    if (!prefill.items.empty()) return prefill;
    StepPlan decode = plan_step(StepKind::decode);
    decode.rejected = std::move(prefill.rejected);  // requests that can never fit, dropped while planning
    return decode;
  }
  StepPlan plan;
  std::int64_t budget = cfg_.token_budget;
  const std::int64_t per_decode = 1 + cfg_.draft_tokens;

  // Decodes first, oldest first; the newest running request not in a step gives way when KV runs out.
  // In one batch that is always the last running request (the step's own items come before it); a
  // victim before the walk's position shifts it back one, so each survivor is still visited once.
  for (std::size_t k = 0; kind != StepKind::prefill && k < running_.size(); ++k) {
    RequestState* r = running_[k];
    if (r->phase != RequestState::Phase::decode) continue;  // prefilling
    if (budget < per_decode) break;
    bool preempted_self = false;
    // The request holds blocks for every computed token, so the step needs more KV only when its
    // tokens cross into a new block (once in block_tokens steps): the rest skip the cache's lookup.
    const bool grows = kv_.blocks_for(r->computed_tokens + per_decode) > kv_.blocks_for(r->computed_tokens);
    while (grows && !kv_.extend(r->id, r->computed_tokens + per_decode)) {
      // r itself is neither in a step nor loading, so there is always one. A loading request keeps its
      // blocks: the load is writing them.
      const auto v = std::find_if(running_.rbegin(), running_.rend(),
                                  [](const RequestState* q) { return !q->in_step && !q->kv_loading; });
      RequestState* victim = *v;
      const auto at = static_cast<std::size_t>(running_.rend() - v - 1);
      plan.preempted.push_back(victim->id);
      preempt(*victim);
      if (victim == r) {
        preempted_self = true;
        break;
      }
      if (at < k) --k;
    }
    if (preempted_self) continue;
    plan.items.push_back(StepItem{r->id, r->computed_tokens, per_decode, true, false, r});
    r->in_step = true;
    plan.decode_tokens += per_decode;
    budget -= per_decode;
  }

  const auto add_chunk = [&](RequestState& r) {
    if (r.kv_loading) return;  // waits for its prefix; the others step meanwhile
    const std::int64_t n = std::min({cfg_.chunk_tokens, budget, r.prefill_target() - r.computed_tokens});
    if (n <= 0) return;
    plan.items.push_back(StepItem{r.id, r.computed_tokens, n, false, r.computed_tokens + n == r.prefill_target(), &r});
    r.in_step = true;
    plan.prefill_tokens += n;
    budget -= n;
  };
  if (kind == StepKind::decode) return plan;
  for (RequestState* r : running_) {
    if (r->phase == RequestState::Phase::prefill && budget > 0) add_chunk(*r);
  }
  while (budget > 0 && !waiting_.empty() && static_cast<std::int64_t>(running_.size()) < cfg_.max_running) {
    const std::size_t i = policy_->pick(waiting_);
    RequestState* r = waiting_[i];
    // One that could never hold its prompt and output is dropped now rather than preempting others later.
    if (!fits(*r)) {
      plan.rejected.push_back(r->id);
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
      requests_.erase(r->id);
      continue;
    }
    if (!admit(*r)) break;  // no KV for it now: later requests wait too, so large ones are not starved
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    running_.push_back(r);
    add_chunk(*r);
  }
  return plan;
}

std::vector<StepOutcome> RankScheduler::complete_step(const StepPlan& plan,
                                                      const std::function<std::int64_t(RequestId)>& accepted_drafts) {
  std::vector<StepOutcome> out;
  out.reserve(plan.items.size());
  bool any_finished = false;
  for (const StepItem& item : plan.items) {
    RequestState& r = *item.state;
    r.in_step = false;
    if (r.cancelled) {
      cancel(r.id);  // cancelled while the step ran
      continue;
    }
    StepOutcome o{r.id, 0, false, false};
    if (item.decode) {
      const std::int64_t kept = std::clamp<std::int64_t>(accepted_drafts(r.id), 0, cfg_.draft_tokens);
      o.new_output_tokens = std::min(1 + kept, r.max_output_tokens - r.output_tokens);
      r.computed_tokens += o.new_output_tokens;
    } else {
      r.computed_tokens += item.new_tokens;
      kv_.publish(r.id, r.prompt_hashes, r.computed_tokens);
      if (item.last_chunk) {
        // The last prompt position yields the next token: the first one, or the next after a preemption.
        o.first_token = r.output_tokens == 0;
        o.new_output_tokens = 1;
        r.phase = RequestState::Phase::decode;
      }
    }
    r.output_tokens += o.new_output_tokens;
    o.finished = r.done();
    if (o.finished) {
      if (r.hold_kv_after_finish) {
        held_.insert(r.id);
      } else {
        kv_.release(r.id);
      }
      r.phase = RequestState::Phase::finished;
      any_finished = true;
    }
    out.push_back(o);
  }
  if (any_finished) {
    // One pass over the running list, then forget the finished requests.
    std::erase_if(running_, [](const RequestState* r) { return r->phase == RequestState::Phase::finished; });
    for (const StepOutcome& o : out) {
      if (o.finished) requests_.erase(o.id);
    }
  }
  return out;
}

void RankScheduler::abort_step(const StepPlan& plan) {
  for (const StepItem& item : plan.items) {
    RequestState& r = *item.state;
    r.in_step = false;
    if (r.cancelled) cancel(r.id);
  }
}

std::vector<RequestState> RankScheduler::take_all() {
  std::vector<RequestId> ids;
  ids.reserve(requests_.size());
  for (const auto& [id, r] : requests_) {
    if (r.phase != RequestState::Phase::finished) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  std::vector<RequestState> out;
  out.reserve(ids.size());
  for (RequestId id : ids) {
    RequestState r = std::move(requests_.at(id));
    if (kv_.holds(id)) kv_.release(id);
    r.phase = RequestState::Phase::waiting;
    r.computed_tokens = 0;
    r.cached_tokens = 0;
    r.in_step = false;
    r.kv_loading = false;
    if (!r.cancelled) out.push_back(std::move(r));
  }
  for (RequestId id : held_) kv_.release(id);
  held_.clear();
  requests_.clear();
  waiting_.clear();
  running_.clear();
  receiving_ = 0;
  loading_ = 0;
  return out;
}

}  // namespace nvl::engine
