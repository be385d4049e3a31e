// The P/D system under faults: noticing a dead DP rank (health checks and step errors, after the
// detection delay), taking it out of the router's view and the normal group, moving its requests to
// healthy ranks so that they continue from the tokens already delivered, and taking the rank back
// after a GPU reset or a worker restart. Also the faults that hit the router and the KV tiers.
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
        if (!normal_->live(rank)) return std::nullopt;  // out of the group: not watched
        if (normal_->crashed(rank)) return "the worker process of DP rank " + std::to_string(rank) + " exited";
        const hal::Device& gpu = *normal_gpus_.at(static_cast<std::size_t>(rank));
        if (gpu.health() == hal::DeviceHealth::healthy) return std::nullopt;
        return xid_text(gpu.health(), gpu.id()) + " under DP rank " + std::to_string(rank);
      },
      [this](std::int32_t rank, const std::string& why, const std::string&) { declare_dead(rank, why); },
      [this] { return !timings_.empty(); });
  normal_->on_step_failure([this](std::int32_t rank, const hal::HalError&) {
    health_->operation_error(rank);
    health_->watch();
  });
  health_->watch();
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
    health_->rank_back(rank);
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
