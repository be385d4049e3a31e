// The prefill worker under faults: a step that fails (a GPU's Xid of any stage, an aborted TP/EP or
// hand-on collective, the worker process gone) is undone and reported; the worker does not step again
// until it is taken down (its TP groups cannot run without every GPU) or, when every GPU is healthy (a
// link or collective error), retries on new communicators. With pipeline stages, requests whose
// chunks the scheduler had counted before the later stages ran them start again from scratch. A worker
// taken down loses its queue and its KV cache; it comes back with new communicators once its GPUs are
// reset or its process restarted.
#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>

#include "engine/worker/prefill_worker.h"

namespace nvl::engine {

namespace {

hal::HalError process_gone(hal::DeviceId gpu) {
  return hal::HalError(gpu, "step", hal::Xid::none, "the worker process of the prefill worker is not running");
}

// Waits for each stream; keeps the first error.
template <typename Gpus>
void synchronize(Gpus&& gpus, std::optional<hal::HalError>& failure) {
  for (auto& g : gpus) {
    try {
      g.stream->synchronize();
    } catch (const hal::HalError& e) {
      if (!failure) failure = e;
    }
  }
}

}  // namespace

bool PrefillWorker::run_step() {
  // A step that finishes prompts waits for the last stage (their first tokens); any other step only
  // for the first, which then takes the next while the later stages go on with this one.
  const bool whole = pp() == 1 || std::any_of(ranks_.begin(), ranks_.end(), [](const DpRank& r) {
                       return std::any_of(r.plan.items.begin(), r.plan.items.end(),
                                          [](const StepItem& item) { return item.last_chunk; });
                     });
  const std::size_t waited = whole ? gpus_.size() : static_cast<std::size_t>(members());
  std::optional<hal::HalError> failure;
  stepping_ = true;
  if (crashed_) {
    failure = process_gone(gpus_.front().device->id());
  } else {
    try {
      launch_step();
    } catch (const hal::HalError& e) {
      failure = e;
    }
    synchronize(std::span(gpus_).first(waited), failure);
    // After a failure nothing may still run on the later stages when the step is tried again.
    if (failure) synchronize(std::span(gpus_).subspan(waited), failure);
    // Died while the step ran: its results went with it.
    if (!failure && crashed_) failure = process_gone(gpus_.front().device->id());
  }
  stepping_ = false;
  if (failure) {
    step_failed(true, *failure);
    return false;
  }
  if (whole) {
    drained_ = true;
    unconfirmed_.clear();
  } else {
    drained_ = false;
    for (const DpRank& r : ranks_) {
      for (const StepItem& item : r.plan.items) unconfirmed_.push_back(item.id);
    }
  }
  return true;
}

bool PrefillWorker::drain() {
  std::optional<hal::HalError> failure;
  stepping_ = true;
  synchronize(gpus_, failure);
  if (!failure && crashed_) failure = process_gone(gpus_.front().device->id());
  stepping_ = false;
  drained_ = true;
  if (!failure || !live_) {  // taken down meanwhile: what its stages ran went with it
    unconfirmed_.clear();
    return true;
  }
  step_failed(false, *failure);
  return false;
}

void PrefillWorker::step_failed(bool planned, const hal::HalError& failure) {
  drained_ = true;
  for (DpRank& r : ranks_) {
    if (planned) r.sched->abort_step(r.plan);
  }
  restart_unconfirmed();
  rt_.record("prefill-worker", "step_failed",
             {{"gpu", failure.device()}, {"xid", static_cast<int>(failure.cause())}, {"error", failure.what()}, {"step", steps_}},
             rt::Severity::warning);
  if (on_failure_) on_failure_(failure);
}

void PrefillWorker::restart_unconfirmed() {
  if (unconfirmed_.empty()) return;
  std::sort(unconfirmed_.begin(), unconfirmed_.end());
  unconfirmed_.erase(std::unique(unconfirmed_.begin(), unconfirmed_.end()), unconfirmed_.end());
  std::size_t restarted = 0;
  for (RequestId id : unconfirmed_) {
    for (DpRank& rank : ranks_) {
      const RequestState* r = rank.sched->find(id);
      if (r == nullptr) continue;  // not on this rank, or cancelled since
      RequestState again = *r;
      again.phase = RequestState::Phase::waiting;
      again.computed_tokens = 0;
      again.cached_tokens = 0;
      again.output_tokens = 0;
      again.in_step = false;
      ++again.preemptions;  // recomputed from the start, as after a preemption
      rank.sched->cancel(id);
      rank.sched->enqueue(std::move(again));
      ++restarted;
    }
  }
  unconfirmed_.clear();
  std::int64_t dropped_blocks = 0;
  for (DpRank& rank : ranks_) dropped_blocks += rank.kv->drop_gpu_cached();
  rt_.record("prefill-worker", "restarted_unconfirmed",
             {{"requests", restarted}, {"kv_blocks_dropped", dropped_blocks}}, rt::Severity::warning);
}

void PrefillWorker::apply_deferred() {
  for (auto& change : std::exchange(deferred_, {})) change();
}

void PrefillWorker::await_repair() {
  repaired_ = false;
  apply_deferred();  // a take-down asked for while the step ran
  while (!repaired_) {
    const bool healthy = !crashed_ && std::all_of(gpus_.begin(), gpus_.end(), [](const Gpu& g) {
      return g.device->health() == hal::DeviceHealth::healthy;
    });
    if (healthy) {
      // A link or collective error on healthy GPUs: the communicators are gone, so retry on new ones.
      rt_.sleep(cfg_.failed_step_backoff);
      if (!repaired_) rebuild_groups("retry after a failed step");
      return;
    }
    repair_.wait([this] { return repaired_; });
  }
}

void PrefillWorker::rebuild_groups(const std::string& why) {
  ++generation_;
  for (std::int64_t s = 0; s < pp(); ++s) {
    Stage& stage = stages_[static_cast<std::size_t>(s)];
    for (const auto& tp_group : stage.tp_groups) retired_groups_.push_back(tp_group);
    if (stage.ep_group) retired_groups_.push_back(stage.ep_group);
    if (stage.moe_tp_group) retired_groups_.push_back(stage.moe_tp_group);
    for (const auto& pair : stage.to_next) retired_groups_.push_back(pair);
    create_groups(s, ".g" + std::to_string(generation_));
  }
  for (std::int64_t s = 0; s < pp(); ++s) {
    for (std::int64_t m = 0; m < members(); ++m) gpu(s, m).builder = make_builder(stages_[static_cast<std::size_t>(s)], m);
  }
  rt_.record("prefill-worker", "groups_rebuilt", {{"why", why}, {"generation", generation_}});
}

void PrefillWorker::apply_or_defer(std::function<void()> change) {
  if (stepping_) {
    deferred_.push_back(std::move(change));
  } else {
    change();
  }
}

void PrefillWorker::crash() {
  if (!live_ || crashed_) return;
  crashed_ = true;
  rt_.record("prefill-worker", "worker_crashed", nlohmann::json::object(), rt::Severity::warning);
  new_work_ = true;  // a queued request's step now fails on it
  work_.notify_all();
}

void PrefillWorker::take_down(const std::string& cause) {
  apply_or_defer([this, cause] {
    if (!live_) return;
    live_ = false;
    std::size_t requests = 0;
    std::int64_t dropped_blocks = 0;
    for (DpRank& rank : ranks_) {
      requests += rank.sched->take_all().size();
      dropped_blocks += rank.kv->drop_gpu_cached();
    }
    unconfirmed_.clear();
    rt_.record("prefill-worker", "taken_down",
               {{"cause", cause}, {"requests", requests}, {"kv_blocks_dropped", dropped_blocks}}, rt::Severity::warning);
    repaired_ = true;  // nothing left to step: the loop goes back to waiting for work
    repair_.notify_all();
  });
}

void PrefillWorker::restore() {
  apply_or_defer([this] {
    if (live_) return;
    for (const Gpu& g : gpus_) {
      if (g.device->health() != hal::DeviceHealth::healthy) {
        throw std::logic_error("prefill worker: cannot come back on unhealthy GPU " + std::to_string(g.device->id()));
      }
    }
    live_ = true;
    crashed_ = false;
    rebuild_groups("back");
    rt_.record("prefill-worker", "restored", nlohmann::json::object(), rt::Severity::warning);
    new_work_ = true;
    work_.notify_all();
  });
}

}  // namespace nvl::engine
