// The P/D system under faults: noticing a dead DP rank (health checks and step errors, after the
// detection delay), taking it out of the router's view and the normal group, moving its requests to
// healthy ranks so that they continue from the tokens already delivered, and taking the rank back
// after a GPU reset or a worker restart. The prefill worker likewise: declared dead, it leaves the
// router's choices (every prompt prefilled on its DP rank) and hands its requests to their decode
// ranks, and comes back after a reset or restart unless a GPU of its TP group is lost. Also the faults
// that hit the router and the KV tiers.
#include <algorithm>
#include <stdexcept>

#include "engine/system/pd_system.h"

namespace nvl::engine {

namespace {
std::string xid_text(hal::DeviceHealth h, hal::DeviceId gpu) {
  switch (h) {
    case hal::DeviceHealth::lost:
      return "GPU " + std::to_string(gpu) + " lost (Xid 79)";
    case hal::DeviceHealth::needs_reset:
      return "GPU " + std::to_string(gpu) + " needs a reset (Xid 48)";
    case hal::DeviceHealth::healthy:
      break;
  }
  return "";
}
}  // namespace

void PdSystem::start_recovery() {
  health_.emplace(
      rt_, cfg_.health, ranks(),
      [this](std::int32_t member) -> std::optional<std::string> {
        if (member < 0) return prefill_probe(static_cast<std::size_t>(HealthMonitor::prefill_instance_of(member)));
        if (!rank_live(member)) return std::nullopt;  // out of the group: not watched
        if (group_of(member).crashed(local_rank(member))) {
          return "the worker process of DP rank " + std::to_string(member) + " exited";
        }
        for (const hal::DeviceId id : group_of(member).devices_of(local_rank(member))) {
          const hal::Device& gpu = *devices_.at(id);
          if (gpu.health() != hal::DeviceHealth::healthy) {
            return xid_text(gpu.health(), gpu.id()) + " under DP rank " + std::to_string(member);
          }
        }
        return std::nullopt;
      },
      [this](std::int32_t member, const std::string& why, const std::string&) {
        if (member < 0) {
          declare_prefill_dead(static_cast<std::size_t>(HealthMonitor::prefill_instance_of(member)), why);
        } else {
          declare_dead(member, why);
        }
      },
      [this] { return !timings_.empty(); }, static_cast<std::int32_t>(prefills_.size()));
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::int32_t base = first_rank_[g];
    groups_[g]->on_step_failure([this, base](std::int32_t local, const hal::HalError&) {
      health_->operation_error(base + local);
      health_->watch();
    });
  }
  for (std::size_t i = 0; i < prefills_.size(); ++i) {
    prefills_[i].worker->on_step_failure([this, i](const hal::HalError&) {
      health_->operation_error(HealthMonitor::prefill_member(static_cast<std::int32_t>(i)));
      health_->watch();
    });
  }
  health_->watch();
}

std::optional<std::string> PdSystem::prefill_probe(std::size_t instance) const {
  const PrefillSlot& p = prefills_.at(instance);
  const std::string which = prefills_.size() > 1 ? "prefill instance " + std::to_string(instance) : "the prefill worker";
  if (!p.worker->live()) return std::nullopt;  // out: not watched
  if (p.worker->crashed()) return "the worker process of " + which + " exited";
  for (const hal::Device* gpu : p.gpus) {
    if (gpu->health() != hal::DeviceHealth::healthy) return xid_text(gpu->health(), gpu->id()) + " under " + which;
  }
  return std::nullopt;
}

void PdSystem::declare_prefill_dead(std::size_t instance, const std::string& why) {
  PrefillSlot& p = prefills_.at(instance);
  p.down = why;
  const bool others_up = choose_prefill().has_value();
  router_.set_prefill_worker_up(others_up);
  if (!others_up) {
    rt_.record("router", "prefill_path_off", {{"why", why}, {"next", "every prompt prefilled on its DP rank"}},
               rt::Severity::warning);
  }
  // Every request the instance held, queued or prefilling or its KV still moving, is prefilled on its
  // decode rank instead, in the KV room that rank took for the transfer. Pushes still in flight land
  // unheeded; the worker's copy goes with it.
  std::vector<std::pair<RequestId, std::int32_t>> held;
  for (const auto& [id, m] : moving_) {
    if (m.prefill == instance) held.emplace_back(id, m.rank);
  }
  for (const auto& [id, rank] : held) {
    moving_.erase(id);
    forget_prefill(id);
  }
  p.worker->take_down(why);
  for (const auto& [id, rank] : held) reprefill(rank, id, "prefill_worker_down", why);
  nlohmann::json removed{{"why", why}, {"requests", held.size()}};
  if (instance > 0) removed["instance"] = instance;
  rt_.record("pd", "prefill_worker_removed", std::move(removed), rt::Severity::warning);
  // It comes back after a reset of the GPUs that need one, or a restart of its process. Its TP group
  // cannot run without a lost GPU: then it stays out.
  const bool crashed = p.worker->crashed();
  const bool lost = std::any_of(p.gpus.begin(), p.gpus.end(),
                                [](const hal::Device* g) { return g->health() == hal::DeviceHealth::lost; });
  if (lost) {
    rt_.record("health", "prefill_worker_out", {{"why", why}, {"until", "the end of the run"}}, rt::Severity::warning);
    return;
  }
  rt_.call_after(crashed ? cfg_.health.worker_restart_time : cfg_.health.gpu_reset_time, [this, instance, crashed, why] {
    PrefillSlot& back = prefills_[instance];
    for (hal::Device* gpu : back.gpus) {
      if (gpu->health() == hal::DeviceHealth::needs_reset) gpu->reset();
    }
    if (std::any_of(back.gpus.begin(), back.gpus.end(),
                    [](const hal::Device* g) { return g->health() != hal::DeviceHealth::healthy; })) {
      rt_.record("health", "prefill_worker_out", {{"why", "a GPU was lost while it was out"}, {"until", "the end of the run"}},
                 rt::Severity::warning);
      return;
    }
    back.worker->restore();
    back.down.reset();
    health_->back(HealthMonitor::prefill_member(static_cast<std::int32_t>(instance)));
    const bool was_off = !router_.prefill_worker_up();
    router_.set_prefill_worker_up(true);
    rt_.record("health", "prefill_worker_back", {{"how", crashed ? "restarted" : "reset"}, {"after", why}},
               rt::Severity::warning);
    if (was_off) rt_.record("router", "prefill_path_on", nlohmann::json::object(), rt::Severity::warning);
  });
}

void PdSystem::declare_dead(std::int32_t rank, const std::string& why) {
  dead_why_[rank] = why;
  // The router stops choosing it at once (it is the one that declared it), not at the next load report.
  RankLoad dead = view_.at(rank);
  dead.healthy = false;
  view_.report(rank, dead, rt_.now());
  NormalWorkerGroup& group = group_of(rank);
  const std::int32_t local = local_rank(rank);
  const bool crashed = group.crashed(local);
  // Nor does it plan fetches from the dead GPU's HBM; its Grace memory, on the host, is still there
  // unless the worker process that held it died.
  for (const auto& [pool, tier] : {std::pair{&kv(rank).gpu(), KvTier::gpu}, std::pair{&kv(rank).grace(), KvTier::grace}}) {
    if (tier == KvTier::grace && !crashed) continue;
    for (BlockId b = 0; b < static_cast<BlockId>(pool->capacity()); ++b) {
      if (const auto h = pool->hash_of(b)) router_.on_kv_event(KvEvent{KvEvent::Kind::removed, tier, rank, *h});
    }
  }
  group.remove_rank(local, why, [this, rank, why](std::vector<RequestState> requests) {
    migrate(rank, std::move(requests), why);
  });
  if (crashed) kv(rank).drop_grace_cached();  // the process's pinned memory went with it
  // What comes back: a GPU after its reset (drained first: the group no longer runs on it), a worker
  // after its restart. A lost GPU does not.
  std::vector<hal::Device*> gpus;
  for (const hal::DeviceId id : group.devices_of(local)) gpus.push_back(devices_.at(id));
  const auto any = [&gpus](hal::DeviceHealth h) {
    return std::any_of(gpus.begin(), gpus.end(), [h](const hal::Device* g) { return g->health() == h; });
  };
  rt::Duration back_after;
  if (crashed) {
    back_after = cfg_.health.worker_restart_time;
  } else if (any(hal::DeviceHealth::needs_reset) && !any(hal::DeviceHealth::lost)) {
    back_after = cfg_.health.gpu_reset_time;
  } else {
    return;
  }
  rt_.call_after(back_after, [this, rank, gpus] {
    for (hal::Device* gpu : gpus) {
      if (gpu->health() == hal::DeviceHealth::needs_reset) gpu->reset();
    }
    for (const hal::Device* gpu : gpus) {
      if (gpu->health() != hal::DeviceHealth::healthy) return;  // lost meanwhile
    }
    group_of(rank).restore_rank(local_rank(rank));
    dead_why_.erase(rank);
    health_->back(rank);
    RankLoad back = group_of(rank).load(local_rank(rank));
    view_.report(rank, back, rt_.now());
    rt_.record("health", "rank_back", {{"rank", rank}}, rt::Severity::warning);
  });
}

void PdSystem::migrate(std::int32_t rank, std::vector<RequestState> requests, const std::string& why) {
  for (RequestState& r : requests) {
    const RequestId id = r.id;
    if (!live(id)) continue;  // cancelled: its end is on the way
    const auto moving = moving_.find(id);
    if (moving != moving_.end()) {
      // Its KV was moving in from a prefill instance: that stops, and the instance's copy is freed.
      prefill(moving->second.prefill).release_kv(id);
      prefill(moving->second.prefill).cancel(id);
      moving_.erase(moving);
    }
    forget_prefill(id);
    rt_.record("pd", "request_migrated",
               {{"request", id}, {"from_rank", rank}, {"output_tokens", r.output_tokens}, {"why", why}},
               rt::Severity::warning);
    if (live_ranks() == 0) {
      end_request(router_address_, id, "DP rank " + std::to_string(rank) + " failed (" + why + ") and no DP rank is left");
      continue;
    }
    // It resumes on whichever rank the router picks, prefilled there (prompt and the tokens delivered).
    resume_from_[id] = r.output_tokens;
    route(std::move(r));
  }
}

bool PdSystem::redirect(std::int32_t rank, RequestState& request, bool prefill_path) {
  if (!rank_live(rank)) {
    rt_.record("pd", "request_redirected", {{"request", request.id}, {"dead_rank", rank}});
    if (live_ranks() == 0) {
      const auto why = dead_why_.find(rank);
      end_request(rank_address(rank), request.id,
                  "DP rank " + std::to_string(rank) + " failed (" + (why != dead_why_.end() ? why->second : "") +
                      ") and no DP rank is left");
      return true;
    }
    route(std::move(request));
    return true;
  }
  const auto it = resume_from_.find(request.id);
  if (it == resume_from_.end()) return false;
  request.output_tokens = it->second;
  resume_from_.erase(it);
  if (!prefill_path) return false;
  group_of(rank).submit(local_rank(rank), std::move(request));
  return true;
}

void PdSystem::crash_worker(std::int32_t rank) {
  if (rank < 0 || rank >= ranks()) throw std::out_of_range("no DP rank " + std::to_string(rank));
  group_of(rank).crash(local_rank(rank));
  health_->watch();
}

void PdSystem::crash_prefill_worker(std::size_t instance) {
  if (instance >= prefills_.size()) throw std::logic_error("crash_prefill_worker: no prefill instance " + std::to_string(instance));
  prefills_[instance].worker->crash();
  health_->watch();
}

void PdSystem::restart_router() {
  router_.restart();
  std::int64_t live = 0;
  for (std::int32_t r = 0; r < ranks(); ++r) {
    if (!rank_live(r)) continue;
    kv(r).republish();
    ++live;
  }
  rt_.record("router", "restarted", {{"ranks_republishing", live}}, rt::Severity::warning);
}

std::int32_t PdSystem::live_ranks() const {
  std::int32_t live = 0;
  for (const auto& g : groups_) live += g->live_ranks();
  return live;
}

std::int64_t PdSystem::grace_memory_error(std::int32_t rank) {
  if (rank < 0 || rank >= ranks()) throw std::out_of_range("no DP rank " + std::to_string(rank));
  const std::int64_t lost = kv(rank).drop_grace_cached();
  rt_.record("kv", "grace_blocks_lost", {{"rank", rank}, {"blocks", lost}}, rt::Severity::warning);
  return lost;
}

}  // namespace nvl::engine
