// The router under faults: it watches every DP rank and prefill instance (health checks and the step
// errors they report, after the detection delay) and declares the dead ones. A dead rank leaves its
// view and its prefix index, and its requests are routed again to continue from the tokens already
// delivered; a dead prefill instance leaves its choices (every prompt prefilled on its DP rank when
// none is up) and its requests are prefilled on their decode ranks. Each comes back when its host's
// supervisor says so, after a reset or a restart. The router's own restart is here too.
#include <algorithm>

#include "engine/system/decode_instance_process.h"
#include "engine/system/frontend.h"
#include "engine/system/prefill_instance_process.h"
#include "engine/system/router_process.h"

namespace nvl::engine {

void RouterProcess::start_health() {
  health_.emplace(
      rt_, cfg_.health, static_cast<std::int32_t>(dir_.ranks.size()),
      // The probes stand for what the router learns of each host from NVML and its process supervisor
      // (Xid errors, an exited worker), read in-process as a real health check reads the host.
      [this](std::int32_t member) -> std::optional<std::string> {
        if (member < 0) return dir_.prefill.at(static_cast<std::size_t>(HealthMonitor::prefill_instance_of(member)))->probe();
        return dir_.decode_of(member).probe(member);
      },
      [this](std::int32_t member, const std::string& why, const std::string&) {
        if (member < 0) {
          declare_prefill_dead(static_cast<std::size_t>(HealthMonitor::prefill_instance_of(member)), why);
        } else {
          declare_dead(member, why);
        }
      },
      [this] { return dir_.frontend_process->in_flight() > 0; }, static_cast<std::int32_t>(dir_.prefill.size()));
  health_->watch();
}

void RouterProcess::operation_error(std::int32_t member) {
  health_->operation_error(member);
  health_->watch();
}

void RouterProcess::declare_prefill_dead(std::size_t instance, const std::string& why) {
  prefill_down_.at(instance) = why;
  const bool others_up = choose_prefill().has_value();
  router_.set_prefill_worker_up(others_up);
  if (!others_up) {
    rt_.record("router", "prefill_path_off", {{"why", why}, {"next", "every prompt prefilled on its DP rank"}},
               rt::Severity::warning);
  }
  // Every request the instance held, queued or prefilling or its KV still moving, is prefilled on its
  // decode rank instead, in the KV room that rank took for the transfer. Pushes still in flight land
  // unheeded; the worker's copy goes with it. (The instance, told by the router, and the ranks, told
  // in-process: their messages would change the results.)
  PrefillInstanceProcess& p = *dir_.prefill[instance];
  const std::vector<std::pair<RequestId, std::int32_t>> held = p.take_down(why);
  for (const auto& [id, rank] : held) forget_prefill(id);
  for (const auto& [id, rank] : held) dir_.decode_of(rank).reprefill(rank, id, "prefill_worker_down", why);
  rt_.record("pd", "prefill_worker_removed", prefill_record({{"why", why}, {"requests", held.size()}}, instance),
             rt::Severity::warning);
  p.recover(why);
}

void RouterProcess::prefill_back(std::size_t instance, bool crashed, const std::string& why) {
  prefill_down_.at(instance).reset();
  health_->back(HealthMonitor::prefill_member(static_cast<std::int32_t>(instance)));
  const bool was_off = !router_.prefill_worker_up();
  router_.set_prefill_worker_up(true);
  rt_.record("health", "prefill_worker_back", prefill_record({{"how", crashed ? "restarted" : "reset"}, {"after", why}}, instance),
             rt::Severity::warning);
  if (was_off) rt_.record("router", "prefill_path_on", nlohmann::json::object(), rt::Severity::warning);
}

void RouterProcess::declare_dead(std::int32_t rank, const std::string& why) {
  dead_why_[rank] = why;
  // The router stops choosing it at once (it is the one that declared it), not at the next load report.
  RankLoad dead = view_.at(rank);
  dead.healthy = false;
  view_.report(rank, dead, rt_.now());
  DecodeInstanceProcess& d = dir_.decode_of(rank);
  const std::int32_t local = dir_.rank(rank).local;
  const bool crashed = d.group().crashed(local);
  // Nor does it plan fetches from the dead GPU's HBM; its Grace memory, on the host, is still there
  // unless the worker process that held it died. (The blocks are read off the rank in-process: they
  // are the removals the dead rank can no longer publish.)
  KvCacheManager& kv = d.group().kv(local);
  for (const auto& [pool, tier] : {std::pair{&kv.gpu(), KvTier::gpu}, std::pair{&kv.grace(), KvTier::grace}}) {
    if (tier == KvTier::grace && !crashed) continue;
    for (BlockId b = 0; b < static_cast<BlockId>(pool->capacity()); ++b) {
      if (const auto h = pool->hash_of(b)) router_.on_kv_event(KvEvent{KvEvent::Kind::removed, tier, rank, *h});
    }
  }
  // The instance takes the rank out of its group (told in-process, as the group is by its orchestrator).
  d.take_out(rank, why, [this, rank, why](std::vector<RequestState> requests) {
    migrate(rank, std::move(requests), why);
  });
}

void RouterProcess::rank_back(std::int32_t rank, const RankLoad& load) {
  dead_why_.erase(rank);
  health_->back(rank);
  view_.report(rank, load, rt_.now());
  rt_.record("health", "rank_back", {{"rank", rank}}, rt::Severity::warning);
}

void RouterProcess::migrate(std::int32_t rank, std::vector<RequestState> requests, const std::string& why) {
  for (RequestState& r : requests) {
    const RequestId id = r.id;
    if (!dir_.frontend_process->live(id)) continue;  // cancelled: its end is on the way
    // Its KV was moving in from a prefill instance: that stops, and the instance's copy is freed.
    if (PrefillInstanceProcess* p = dir_.moving(id)) p->stop(id);
    forget_prefill(id);
    rt_.record("pd", "request_migrated",
               {{"request", id}, {"from_rank", rank}, {"output_tokens", r.output_tokens}, {"why", why}},
               rt::Severity::warning);
    if (dir_.live_ranks() == 0) {
      end_request(control_, dir_, dir_.router, id,
                  "DP rank " + std::to_string(rank) + " failed (" + why + ") and no DP rank is left");
      continue;
    }
    if (r.target_rank >= 0) {  // sent to that rank's own worker: it fails with it, as a client of that worker sees
      end_request(control_, dir_, dir_.router, id, "DP rank " + std::to_string(rank) + " failed (" + why + ")");
      continue;
    }
    // It resumes on whichever rank the router picks, prefilled there (prompt and the tokens delivered).
    resume_from_[id] = r.output_tokens;
    route(std::move(r));
  }
}

void RouterProcess::restart() {
  router_.restart();
  // Every live rank notices (its connection to the router dropped) and republishes its KV events.
  std::int64_t live = 0;
  for (std::int32_t r = 0; r < static_cast<std::int32_t>(dir_.ranks.size()); ++r) {
    DecodeInstanceProcess& d = dir_.decode_of(r);
    const std::int32_t local = dir_.rank(r).local;
    if (!d.group().live(local)) continue;
    d.group().kv(local).republish();
    ++live;
  }
  rt_.record("router", "restarted", {{"ranks_republishing", live}}, rt::Severity::warning);
}

}  // namespace nvl::engine
