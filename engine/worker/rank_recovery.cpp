// The normal worker group under faults: a step that fails on a GPU is undone and reported against the
// DP rank that GPU belongs to (a rank with attention TP is dead when any of its GPUs is: its heads are
// split over all of them); the group waits (it cannot step while a member is dead: the MoE all-to-all
// joins every GPU) until the dead rank is taken out, then goes on over a new EP communicator without
// the rank's GPUs, with the experts re-placed. A rank whose GPUs were reset (or whose worker
// restarted) rejoins later. Under attention DP + MoE TP the survivors split every expert among
// themselves instead, each loading the part of its larger slice it lacks. With SM partitions a failed
// step on either side stops both: the other side ends the step it runs, starts no other, and the group
// changes only once neither side steps.
#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>
#include <utility>

#include "engine/worker/normal_worker_group.h"

namespace nvl::engine {

bool NormalWorkerGroup::run_step(StepKind kind) {
  std::vector<std::pair<std::int32_t, hal::HalError>> failures;
  const auto failed = [&](std::size_t rank, const hal::HalError& e) {
    failures.emplace_back(static_cast<std::int32_t>(rank), e);
  };
  // The DP ranks agree on each step's batch sizes before any launches it: a dead process never answers,
  // so nobody launches (a rank that did would wait for it in the first all-to-all).
  for (std::size_t rank : live_) {
    if (ranks_[rank].crashed) {
      failed(rank, hal::HalError(ranks_[rank].gpus.front().device->id(), "step", hal::Xid::none,
                                 "the worker process of normal rank " + std::to_string(rank) + " is not running"));
    }
  }
  if (!failures.empty()) return step_failed(kind, failures);
  const bool tbo = two_batch_step();
  const std::size_t l = lane(kind);
  // The gate's choices for the step's tokens, as each GPU reports them (two micro-batches route apart).
  if (traffic_[l] && !tbo) route(tokens_[l], *traffic_[l]);
  for (std::size_t rank : live_) {
    Rank& r = ranks_[rank];
    try {
      // Expert weights reload on whichever side steps first after a rank change.
      for (Gpu& g : r.gpus) {
        if (g.reload_bytes > 0) reload_experts(g, stream_of(g, kind), rank);
      }
      if (!tbo) {
        for (Gpu& g : r.gpus) {
          if (kind == StepKind::prefill) {
            g.stream_p->launch(hal::refresh(*g.device, g.exec_p, numbered(g.builder_p->build(r.batch[l], tokens_[l]))));
          } else {
            g.stream->launch(hal::refresh(*g.device, g.exec, numbered(g.builder->build(r.batch[l], tokens_[l]))));
          }
        }
      }
    } catch (const hal::HalError& e) {
      failed(rank, e);
    }
  }
  if (tbo) {
    try {
      launch_two_batches();
    } catch (const hal::HalError& e) {
      failed(live_.front(), e);
    }
  }
  for (std::size_t rank : live_) {
    for (Gpu& g : ranks_[rank].gpus) {
      // Each side waits for its own streams only.
      const auto streams = kind == StepKind::prefill ? std::array<hal::Stream*, 2>{g.stream_p, nullptr}
                                                     : std::array<hal::Stream*, 2>{g.stream, g.stream_b};
      for (hal::Stream* s : streams) {
        if (s == nullptr) continue;
        try {
          s->synchronize();
        } catch (const hal::HalError& e) {
          failed(rank, e);
        }
      }
    }
  }
  return failures.empty() || step_failed(kind, failures);
}

void NormalWorkerGroup::reload_experts(Gpu& g, hal::Stream& stream, std::size_t rank) {
  // Expert weights this GPU took over come from the checkpoint copy in host memory, before the step.
  const std::uint64_t bytes = std::min(g.reload_bytes, g.weights->bytes());
  g.reload_bytes = 0;
  hal::Buffer staged;
  try {
    staged = g.device->host_memory().allocate(bytes, "normal rank " + std::to_string(rank) + " expert reload");
  } catch (const hal::HalError& e) {
    // Host memory is full (the Grace KV tier took it): the weights come from storage instead, which
    // the emulation does not price; said so rather than failing the step.
    rt_.record("eplb", "expert_reload_unpriced", {{"rank", cfg_.first_rank + static_cast<std::int32_t>(rank)}, {"bytes", bytes}, {"error", e.what()}},
               rt::Severity::warning);
    return;
  }
  stream.copy(*g.weights, 0, staged, 0, bytes);
}

bool NormalWorkerGroup::step_failed(StepKind kind,
                                    const std::vector<std::pair<std::int32_t, hal::HalError>>& failures) {
  for (std::size_t rank : live_) ranks_[rank].sched->abort_step(ranks_[rank].plan[lane(kind)]);
  // Blame the rank one of whose GPUs the error names (an aborted collective names the member that failed).
  std::set<std::int32_t> told;
  for (const auto& [rank, e] : failures) {
    std::int32_t blamed = rank;
    for (std::size_t k : live_) {
      for (const Gpu& g : ranks_[k].gpus) {
        if (g.device->id() == e.device()) blamed = static_cast<std::int32_t>(k);
      }
    }
    if (!told.insert(blamed).second) continue;
    rt_.record("normal-group", "step_failed",
               {{"rank", cfg_.first_rank + blamed}, {"xid", static_cast<int>(e.cause())}, {"error", e.what()}, {"step", steps_}},
               rt::Severity::warning);
    if (on_failure_) on_failure_(blamed, e);
  }
  return false;
}

void NormalWorkerGroup::await_repair() {
  // Changes asked for while the steps ran have applied once this holds (step_over).
  between_.wait([this] { return stepping_ == 0; });
  while (!repaired_) {
    const bool healthy = std::all_of(live_.begin(), live_.end(), [this](std::size_t k) {
      const auto& gpus = ranks_[k].gpus;
      return !ranks_[k].crashed && std::all_of(gpus.begin(), gpus.end(), [](const Gpu& g) {
               return g.device->health() == hal::DeviceHealth::healthy;
             });
    });
    if (healthy) {
      // A link or collective error on healthy GPUs: the communicator is gone, so retry on a new one.
      rt_.sleep(cfg_.failed_step_backoff);
      if (!repaired_) rebuild_group("retry after a failed step");
      return;
    }
    repair_.wait([this] { return repaired_; });
  }
}

void NormalWorkerGroup::rebuild_group(const std::string& why) {
  if (moe_group_) retired_groups_.push_back(std::exchange(moe_group_, nullptr));
  if (moe_group_b_) retired_groups_.push_back(std::exchange(moe_group_b_, nullptr));
  if (moe_group_p_) retired_groups_.push_back(std::exchange(moe_group_p_, nullptr));
  for (Rank& r : ranks_) {
    if (r.tp_group) retired_groups_.push_back(std::exchange(r.tp_group, nullptr));
    if (r.tp_group_b) retired_groups_.push_back(std::exchange(r.tp_group_b, nullptr));
    if (r.tp_group_p) retired_groups_.push_back(std::exchange(r.tp_group_p, nullptr));
  }
  ++generation_;
  const auto gpus = static_cast<std::int64_t>(live_.size()) * tp_;
  std::vector<hal::DeviceId> ids;
  for (std::size_t k : live_) {
    for (const Gpu& g : ranks_[k].gpus) ids.push_back(g.device->id());
  }
  make_moe_groups(ids);
  if (placement_ && gpus > 0) set_traffic_placement();
  for (std::size_t m = 0; m < live_.size(); ++m) {
    make_tp_groups(ranks_[live_[m]], live_[m]);
    make_builders(ranks_[live_[m]], static_cast<std::int32_t>(static_cast<std::int64_t>(m) * tp_));
  }
  for (auto& t : tokens_) t.assign(static_cast<std::size_t>(gpus), 0);
  tokens_a_.assign(static_cast<std::size_t>(gpus), 0);
  tokens_b_.assign(static_cast<std::size_t>(gpus), 0);
  rt_.record("normal-group", "ep_group_rebuilt",
             {{"why", why},
              {"ranks", static_cast<std::int64_t>(live_.size())},
              {"generation", generation_},
              {"expert_imbalance", expert_imbalance()}});
}

void NormalWorkerGroup::remove_rank(std::int32_t rank, const std::string& cause, RequestsTaken taken) {
  ranks_.at(static_cast<std::size_t>(rank)).leaving = true;
  auto change = [this, rank, cause, taken = std::move(taken)] {
    Rank& r = ranks_.at(static_cast<std::size_t>(rank));
    r.leaving = false;
    if (!r.live) {
      taken({});
      return;
    }
    std::vector<RequestState> requests = r.sched->take_all();
    const std::int64_t dropped_blocks = r.kv->drop_gpu_cached();
    r.live = false;
    for (Gpu& g : r.gpus) g.reload_bytes = 0;
    const auto index = std::find(live_.begin(), live_.end(), static_cast<std::size_t>(rank)) - live_.begin();
    live_.erase(live_.begin() + index);
    // The rank's GPUs are EP members [first, first + tp).
    const std::int64_t first = static_cast<std::int64_t>(index) * tp_;
    if (placement_ && !live_.empty()) {
      const ExpertLoad seen = seen_load();
      const double before = placement_->imbalance(seen);
      // Its GPUs leave one by one, highest first, so the members below stay put.
      std::size_t lost = 0;
      ExpertPlacement next = *placement_;
      for (std::int64_t member = first + tp_; member-- > first;) {
        lost += next.experts_lost_with(member).size();
        next = next.without_rank(member, seen);
      }
      std::uint64_t reload = 0;
      for (std::int64_t k = 0; k < next.ranks(); ++k) {
        const auto& had = placement_->experts_on(k < first ? k : k + tp_);
        for (std::int64_t e : next.experts_on(k)) {
          if (std::find(had.begin(), had.end(), e) != had.end()) continue;
          ranks_[live_[static_cast<std::size_t>(k / tp_)]].gpus[static_cast<std::size_t>(k % tp_)].reload_bytes +=
              expert_bytes_;
          reload += expert_bytes_;
        }
      }
      placement_ = std::move(next);
      const double after = placement_->imbalance(seen);
      const std::int64_t next_members = placement_->ranks();
      // The MoE part of a step takes as long as its most loaded rank: fewer ranks, each more loaded.
      rt_.record("eplb", "experts_replaced",
                 {{"rank", cfg_.first_rank + rank},
                  {"experts_only_there", lost},
                  {"ep_ranks", live_.size() * static_cast<std::size_t>(tp_)},
                  {"slots_per_rank", placement_->slots_per_rank()},
                  {"reload_bytes", reload},
                  {"imbalance_before", before},
                  {"imbalance_after", after},
                  {"moe_load_per_rank_factor",
                   after * static_cast<double>(next_members + tp_) / (before * static_cast<double>(next_members))}},
                 rt::Severity::warning);
    } else if (moe_gather_ && !live_.empty()) {
      // MoE TP over fewer GPUs: each survivor's slice of every expert grows; what it lacks loads.
      const std::uint64_t grown = moe_tp_slice_bytes(live_.size()) - moe_tp_slice_bytes(live_.size() + 1);
      for (std::size_t k : live_) {
        for (Gpu& g : ranks_[k].gpus) g.reload_bytes += grown;
      }
    }
    rebuild_group("rank " + std::to_string(rank) + " removed: " + cause);
    rt_.record("normal-group", "rank_removed",
               {{"rank", cfg_.first_rank + rank}, {"cause", cause}, {"requests", requests.size()}, {"kv_blocks_dropped", dropped_blocks}},
               rt::Severity::warning);
    repaired_ = true;
    repair_.notify_all();
    new_work_.fill(true);
    work_.notify_all();
    taken(std::move(requests));
  };
  if (stepping_) {
    deferred_.push_back(std::move(change));
  } else {
    change();
  }
}

void NormalWorkerGroup::restore_rank(std::int32_t rank) {
  auto change = [this, rank] {
    Rank& r = ranks_.at(static_cast<std::size_t>(rank));
    if (r.live) return;
    for (const Gpu& g : r.gpus) {
      if (g.device->health() != hal::DeviceHealth::healthy) {
        throw std::logic_error("normal worker group: rank " + std::to_string(rank) + " cannot rejoin on an unhealthy GPU");
      }
    }
    r.live = true;
    r.crashed = false;
    live_.insert(std::upper_bound(live_.begin(), live_.end(), static_cast<std::size_t>(rank)), static_cast<std::size_t>(rank));
    if (placement_) {
      // Placed afresh over the whole group, then without each rank still out (highest first, so the
      // lower indices stay put): the placement a group of these ranks would have had.
      const auto gpus = static_cast<std::int64_t>(ranks_.size()) * tp_;
      const ExpertLoad seen = seen_load();
      ExpertPlacement next(seen, gpus, cfg_.redundant_experts);
      for (std::int64_t k = gpus; k-- > 0;) {
        if (!ranks_[static_cast<std::size_t>(k / tp_)].live) next = next.without_rank(k, seen);
      }
      placement_ = std::move(next);
      const auto index = std::find(live_.begin(), live_.end(), static_cast<std::size_t>(rank)) - live_.begin();
      for (Gpu& g : r.gpus) {
        const std::int64_t member = static_cast<std::int64_t>(index) * tp_ + g.tp_rank;
        g.reload_bytes = static_cast<std::uint64_t>(placement_->experts_on(member).size()) * expert_bytes_;
      }
    } else if (moe_gather_) {
      // Its GPUs load their slice of every expert; the others' slices shrink.
      for (Gpu& g : r.gpus) g.reload_bytes = moe_tp_slice_bytes(live_.size());
    }
    rebuild_group("rank " + std::to_string(rank) + " back");
    rt_.record("normal-group", "rank_restored",
               {{"rank", cfg_.first_rank + rank}, {"ep_ranks", live_.size() * static_cast<std::size_t>(tp_)}});
    repaired_ = true;
    repair_.notify_all();
    new_work_.fill(true);
    work_.notify_all();
  };
  if (stepping_) {
    deferred_.push_back(std::move(change));
  } else {
    change();
  }
}

void NormalWorkerGroup::crash(std::int32_t rank) {
  Rank& r = ranks_.at(static_cast<std::size_t>(rank));
  if (!r.live || r.crashed) return;
  r.crashed = true;
  rt_.record("normal-group", "worker_crashed", {{"rank", cfg_.first_rank + rank}}, rt::Severity::warning);
  // Its state is gone with the process: the next step fails on it.
  new_work_.fill(true);
  work_.notify_all();
}

}  // namespace nvl::engine
