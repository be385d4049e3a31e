// The prefill worker under faults: a step that fails (a GPU's Xid, an aborted TP/EP collective, the
// worker process gone) is undone and reported; the worker does not step again until it is taken down
// (its TP group cannot run without every GPU) or, when every GPU is healthy (a link or collective
// error), retries on new communicators. A worker taken down loses its queue and its KV cache; it comes
// back with new communicators once its GPUs are reset or its process restarted.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "engine/worker/prefill_worker.h"

namespace nvl::engine {

bool PrefillWorker::run_step(const StepPlan& plan) {
  const auto gone = [this] {
    return hal::HalError(gpus_.front().device->id(), "step", hal::Xid::none,
                         "the worker process of the prefill worker is not running");
  };
  std::optional<hal::HalError> failure;
  stepping_ = true;
  if (crashed_) {
    failure = gone();
  } else {
    try {
      launch_step(plan);
    } catch (const hal::HalError& e) {
      failure = e;
    }
    for (Gpu& g : gpus_) {
      try {
        g.stream->synchronize();
      } catch (const hal::HalError& e) {
        if (!failure) failure = e;
      }
    }
    if (!failure && crashed_) failure = gone();  // died while the step ran: its results went with it
  }
  stepping_ = false;
  if (!failure) return true;
  sched_->abort_step(plan);
  rt_.record("prefill-worker", "step_failed",
             {{"gpu", failure->device()}, {"xid", static_cast<int>(failure->cause())}, {"error", failure->what()}, {"step", steps_}},
             rt::Severity::warning);
  if (on_failure_) on_failure_(*failure);
  return false;
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
  std::vector<hal::DeviceId> ids;
  for (const Gpu& g : gpus_) ids.push_back(g.device->id());
  const std::string suffix = std::to_string(tp()) + ".g" + std::to_string(generation_);
  if (tp_group_) {
    retired_groups_.push_back(tp_group_);
    tp_group_ = collectives_.create_group("prefill-tp" + suffix, ids);
  }
  if (ep_group_) {
    retired_groups_.push_back(ep_group_);
    ep_group_ = collectives_.create_group("prefill-ep" + suffix, ids);
  }
  for (std::size_t r = 0; r < gpus_.size(); ++r) gpus_[r].builder = make_builder(static_cast<std::int64_t>(r));
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
    const std::size_t requests = sched_->take_all().size();
    const std::int64_t dropped_blocks = kv_->drop_gpu_cached();
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
