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
      rt_, cfg_.health, normal_->ranks(),
      [this](std::int32_t rank) -> std::optional<std::string> {
        if (rank == HealthMonitor::kPrefillWorker) return prefill_probe();
        if (!normal_->live(rank)) return std::nullopt;  // out of the group: not watched
        if (normal_->crashed(rank)) return "the worker process of DP rank " + std::to_string(rank) + " exited";
        const hal::Device& gpu = *normal_gpus_.at(static_cast<std::size_t>(rank));
        if (gpu.health() == hal::DeviceHealth::healthy) return std::nullopt;
        return xid_text(gpu.health(), gpu.id()) + " under DP rank " + std::to_string(rank);
      },
      [this](std::int32_t rank, const std::string& why, const std::string&) {
        if (rank == HealthMonitor::kPrefillWorker) {
          declare_prefill_dead(why);
        } else {
          declare_dead(rank, why);
        }
      },
      [this] { return !timings_.empty(); }, prefill_ != nullptr);
  normal_->on_step_failure([this](std::int32_t rank, const hal::HalError&) {
    health_->operation_error(rank);
    health_->watch();
  });
  if (prefill_) {
    prefill_->on_step_failure([this](const hal::HalError&) {
      health_->operation_error(HealthMonitor::kPrefillWorker);
      health_->watch();
    });
  }
  health_->watch();
}

std::optional<std::string> PdSystem::prefill_probe() const {
  if (!prefill_->live()) return std::nullopt;  // out: not watched
  if (prefill_->crashed()) return "the worker process of the prefill worker exited";
  for (const hal::Device* gpu : prefill_gpus_) {
    if (gpu->health() != hal::DeviceHealth::healthy) return xid_text(gpu->health(), gpu->id()) + " under the prefill worker";
  }
  return std::nullopt;
}

void PdSystem::declare_prefill_dead(const std::string& why) {
  prefill_down_ = why;
  router_.set_prefill_worker_up(false);
  rt_.record("router", "prefill_path_off", {{"why", why}, {"next", "every prompt prefilled on its DP rank"}},
             rt::Severity::warning);
  // Every request the worker held, queued or prefilling or its KV still moving, is prefilled on its
  // decode rank instead, in the KV room that rank took for the transfer. Pushes still in flight land
  // unheeded; the worker's copy goes with it.
  std::vector<std::pair<RequestId, std::int32_t>> held;
  for (const auto& [id, m] : moving_) held.emplace_back(id, m.rank);
  moving_.clear();
  prefill_->take_down(why);
  for (const auto& [id, rank] : held) reprefill(rank, id, "prefill_worker_down", why);
  rt_.record("pd", "prefill_worker_removed", {{"why", why}, {"requests", held.size()}}, rt::Severity::warning);
  // It comes back after a reset of the GPUs that need one, or a restart of its process. Its TP group
  // cannot run without a lost GPU: then it stays out.
  const bool crashed = prefill_->crashed();
  const bool lost = std::any_of(prefill_gpus_.begin(), prefill_gpus_.end(),
                                [](const hal::Device* g) { return g->health() == hal::DeviceHealth::lost; });
  if (lost) {
    rt_.record("health", "prefill_worker_out", {{"why", why}, {"until", "the end of the run"}}, rt::Severity::warning);
    return;
  }
  rt_.call_after(crashed ? cfg_.health.worker_restart_time : cfg_.health.gpu_reset_time, [this, crashed, why] {
    for (hal::Device* gpu : prefill_gpus_) {
      if (gpu->health() == hal::DeviceHealth::needs_reset) gpu->reset();
    }
    if (std::any_of(prefill_gpus_.begin(), prefill_gpus_.end(),
                    [](const hal::Device* g) { return g->health() != hal::DeviceHealth::healthy; })) {
      rt_.record("health", "prefill_worker_out", {{"why", "a GPU was lost while it was out"}, {"until", "the end of the run"}},
                 rt::Severity::warning);
      return;
    }
    prefill_->restore();
    prefill_down_.reset();
    health_->back(HealthMonitor::kPrefillWorker);
    router_.set_prefill_worker_up(true);
    rt_.record("health", "prefill_worker_back", {{"how", crashed ? "restarted" : "reset"}, {"after", why}},
               rt::Severity::warning);
    rt_.record("router", "prefill_path_on", nlohmann::json::object(), rt::Severity::warning);
  });
}

void PdSystem::declare_dead(std::int32_t rank, const std::string& why) {
  dead_why_[rank] = why;
  // The router stops choosing it at once (it is the one that declared it), not at the next load report.
  RankLoad dead = view_.at(rank);
  dead.healthy = false;
  view_.report(rank, dead, rt_.now());
  hal::Device& gpu = *normal_gpus_.at(static_cast<std::size_t>(rank));
  const bool crashed = normal_->crashed(rank);
  // Nor does it plan fetches from the dead GPU's HBM; its Grace memory, on the host, is still there
  // unless the worker process that held it died.
  for (const auto& [pool, tier] : {std::pair{&normal_->kv(rank).gpu(), KvTier::gpu}, std::pair{&normal_->kv(rank).grace(), KvTier::grace}}) {
    if (tier == KvTier::grace && !crashed) continue;
    for (BlockId b = 0; b < static_cast<BlockId>(pool->capacity()); ++b) {
      if (const auto h = pool->hash_of(b)) router_.on_kv_event(KvEvent{KvEvent::Kind::removed, tier, rank, *h});
    }
  }
  normal_->remove_rank(rank, why, [this, rank, why](std::vector<RequestState> requests) {
    migrate(rank, std::move(requests), why);
  });
  if (crashed) normal_->kv(rank).drop_grace_cached();  // the process's pinned memory went with it
  // What comes back: a GPU after its reset (drained first: the group no longer runs on it), a worker
  // after its restart. A lost GPU does not.
  rt::Duration back_after;
  if (crashed) {
    back_after = cfg_.health.worker_restart_time;
  } else if (gpu.health() == hal::DeviceHealth::needs_reset) {
    back_after = cfg_.health.gpu_reset_time;
  } else {
    return;
  }
  rt_.call_after(back_after, [this, rank, &gpu] {
    if (gpu.health() == hal::DeviceHealth::needs_reset) gpu.reset();
    if (gpu.health() != hal::DeviceHealth::healthy) return;  // lost meanwhile
    normal_->restore_rank(rank);
    dead_why_.erase(rank);
    health_->back(rank);
    RankLoad back = normal_->load(rank);
    view_.report(rank, back, rt_.now());
    rt_.record("health", "rank_back", {{"rank", rank}}, rt::Severity::warning);
  });
}

void PdSystem::migrate(std::int32_t rank, std::vector<RequestState> requests, const std::string& why) {
  for (RequestState& r : requests) {
    const RequestId id = r.id;
    if (!live(id)) continue;  // cancelled: its end is on the way
    if (moving_.erase(id) > 0) {
      // Its KV was moving in from the prefill worker: that stops, and the prefill worker's copy is freed.
      prefill_->release_kv(id);
      prefill_->cancel(id);
    }
    rt_.record("pd", "request_migrated",
               {{"request", id}, {"from_rank", rank}, {"output_tokens", r.output_tokens}, {"why", why}},
               rt::Severity::warning);
    if (normal_->live_ranks() == 0) {
      end_request(router_address_, id, "DP rank " + std::to_string(rank) + " failed (" + why + ") and no DP rank is left");
      continue;
    }
    // It resumes on whichever rank the router picks, prefilled there (prompt and the tokens delivered).
    resume_from_[id] = r.output_tokens;
    route(std::move(r));
  }
}

bool PdSystem::redirect(std::int32_t rank, RequestState& request, bool prefill_path) {
  if (!normal_->live(rank)) {
    rt_.record("pd", "request_redirected", {{"request", request.id}, {"dead_rank", rank}});
    if (normal_->live_ranks() == 0) {
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
  normal_->submit(rank, std::move(request));
  return true;
}

void PdSystem::crash_worker(std::int32_t rank) {
  if (rank < 0 || rank >= normal_->ranks()) throw std::out_of_range("no DP rank " + std::to_string(rank));
  normal_->crash(rank);
  health_->watch();
}

void PdSystem::crash_prefill_worker() {
  if (!prefill_) throw std::logic_error("crash_prefill_worker: the deployment has no prefill worker");
  prefill_->crash();
  health_->watch();
}

void PdSystem::restart_router() {
  router_.restart();
  std::int64_t live = 0;
  for (std::int32_t r = 0; r < normal_->ranks(); ++r) {
    if (!normal_->live(r)) continue;
    normal_->kv(r).republish();
    ++live;
  }
  rt_.record("router", "restarted", {{"ranks_republishing", live}}, rt::Severity::warning);
}

std::int64_t PdSystem::grace_memory_error(std::int32_t rank) {
  if (rank < 0 || rank >= normal_->ranks()) throw std::out_of_range("no DP rank " + std::to_string(rank));
  const std::int64_t lost = normal_->kv(rank).drop_grace_cached();
  rt_.record("kv", "grace_blocks_lost", {{"rank", rank}, {"blocks", lost}}, rt::Severity::warning);
  return lost;
}

}  // namespace nvl::engine
