#include "engine/system/router_process.h"

#include <algorithm>
#include <stdexcept>

#include "engine/system/control_codec.h"
#include "engine/system/frontend.h"

namespace nvl::engine {

RouterProcess::RouterProcess(rt::Runtime& rt, const PdSystemConfig& cfg, ControlPlane& control, PdDirectory& dir,
                             std::int32_t ranks, RouterConfig router, bool fetch_rdma, std::size_t decode_instances,
                             std::size_t prefill_instances)
    : rt_(rt),
      cfg_(cfg),
      control_(control),
      dir_(dir),
      router_(ranks, router),
      view_(ranks),
      fetch_rdma_(fetch_rdma),
      routed_to_instance_(decode_instances, 0),
      prefill_outstanding_(prefill_instances, 0),
      prefill_down_(prefill_instances) {}

void RouterProcess::on_message(const proto::ControlMessage& m) {
  switch (m.body_case()) {
    case proto::ControlMessage::kSubmit:
      route(from_spec(m.submit().spec()));
      return;
    case proto::ControlMessage::kKvEvent:
      for (const KvEvent& e : from_message(m.kv_event())) router_.on_kv_event(e);
      return;
    case proto::ControlMessage::kLoad:
      view_.report(m.load().rank(), from_report(m.load()), rt::Time::zero() + rt::ns(m.load().at_ns()));
      return;
    case proto::ControlMessage::kCancel:
      cancel(m.cancel());
      return;
    case proto::ControlMessage::kHealthStatus: {
      answer_health(m.health_status().rank(), m.health_status().healthy(), m.health_status().detail());
      return;
    }
    default:
      throw std::logic_error("router: unexpected control message " + kind_of(m));
  }
}

void RouterProcess::route(RequestState request) {
  const RequestId id = request.id;
  if (!dir_.frontend_process->live(id)) return;  // cancelled while it waited for room
  const bool direct = request.target_rank >= 0;
  std::optional<RouteDecision> d;
  if (direct) {
    if (request.target_rank >= static_cast<std::int32_t>(view_.loads().size()) || !view_.at(request.target_rank).healthy) {
      end_request(control_, dir_, dir_.router, id, "DP rank " + std::to_string(request.target_rank) + " is not serving");
      return;
    }
    d.emplace();
    d->rank = request.target_rank;  // prefilled there: a worker serves what it is sent
    d->matches = router_.index().match(request.prompt_hashes);
    d->cached_tokens = std::min(request.prompt_tokens,
                                d->matches[static_cast<std::size_t>(d->rank)].grace_blocks * block_tokens());
  } else {
    d = router_.route(request.prompt_hashes, request.prompt_tokens, view_.loads());
  }
  if (!d) {
    end_request(control_, dir_, dir_.router, id, "no healthy DP rank to serve it");
    return;
  }
  proto::ControlMessage msg;
  proto::ScheduleOnRank& s = *msg.mutable_schedule();
  s.set_rank(d->rank);
  s.set_decode_rank(d->rank);
  s.set_fetch_from_rank(-1);
  s.set_transport(cfg_.transfer.path == hal::RdmaPath::nvlink ? proto::KV_TRANSPORT_NVLINK : proto::KV_TRANSPORT_RDMA);
  // The router counted the longest hit anywhere; what this rank gets is its own hit plus a fetch, if
  // one pays. A prompt still long after that goes to the prefill worker after all.
  const LocalPrefill mode = dir_.rank(d->rank).local_prefill;
  const std::int32_t named_prefill = direct ? request.target_prefill_instance : -1;
  if (named_prefill >= 0 && (named_prefill >= static_cast<std::int32_t>(prefill_down_.size()) ||
                             prefill_down_[static_cast<std::size_t>(named_prefill)])) {
    end_request(control_, dir_, dir_.router, id, "prefill instance " + std::to_string(named_prefill) + " is not serving");
    return;
  }
  if (direct && named_prefill < 0 && mode == LocalPrefill::never) {
    end_request(control_, dir_, dir_.router, id,
                "DP rank " + std::to_string(d->rank) + " only decodes (its prompts are prefilled by a prefill instance): "
                "send the request through the router, or name the prefill instance that prefills it");
    return;
  }
  PrefillPath path = named_prefill >= 0                       ? PrefillPath::prefill_worker
                     : mode == LocalPrefill::always || direct ? PrefillPath::local
                                                              : d->path;
  if (path == PrefillPath::local) {
    const std::vector<RankMatch> matches = d->matches.empty() ? router_.index().match(request.prompt_hashes) : d->matches;
    const std::int64_t own_blocks = matches[static_cast<std::size_t>(d->rank)].grace_blocks;
    FetchDecision f;
    if (fetch_rdma_ && cfg_.fetch_remote_prefix && !direct) {
      f = plan_fetch(matches, d->rank, block_tokens(), dir_.kv_bytes_per_token, cfg_.fetch);
      if (f.blocks > 0) {
        // No more than the rank has room for, by its last report.
        const std::int64_t room = view_.at(d->rank).free_kv_blocks;
        rt_.record("router", "prefix_fetch_decision",
                   {{"request", id},
                    {"fetch", f.source != PrefixSource::none && room > 0},
                    {"from_rank", f.from_rank},
                    {"blocks", f.blocks},
                    {"room_blocks", room},
                    {"pooled", cfg_.kv_pool},
                    {"fetch_us", f.fetch_time.microseconds()},
                    {"recompute_us", f.recompute_time.microseconds()}});
        f.blocks = std::min(f.blocks, room);
        if (f.blocks <= 0) f.source = PrefixSource::none;
      }
    }
    const std::int64_t reachable = own_blocks + (f.source != PrefixSource::none ? f.blocks : 0);
    const bool long_prompt =
        request.prompt_tokens - reachable * block_tokens() >= router_.config().prefill_threshold_tokens;
    if (!direct && mode != LocalPrefill::always && any_prefill_up() && (long_prompt || mode == LocalPrefill::never)) {
      path = PrefillPath::prefill_worker;
    } else {
      s.set_cached_prefix_tokens(static_cast<std::uint32_t>(own_blocks * block_tokens()));
      if (f.source != PrefixSource::none) {
        s.set_fetch_from_rank(f.from_rank);
        s.set_fetch_blocks(static_cast<std::uint32_t>(f.blocks));
        s.set_fetch_from_grace(f.source == PrefixSource::peer_grace);
      }
    }
  }
  std::optional<std::size_t> prefill_instance;
  if (path == PrefillPath::prefill_worker) {
    prefill_instance = named_prefill >= 0 ? std::optional<std::size_t>(named_prefill) : choose_prefill();
    if (prefill_instance) {
      prefill_outstanding_[*prefill_instance] += request.prompt_tokens;
      prefill_sent_[id] = {*prefill_instance, request.prompt_tokens};
      s.set_prefill_instance(static_cast<std::int32_t>(*prefill_instance));
    } else {
      path = PrefillPath::local;  // every prefill instance is down: the rank prefills it
    }
  }
  ++routed_[static_cast<std::size_t>(path)];
  ++routed_to_instance_[dir_.rank(d->rank).instance];
  placed_[id] = d->rank;
  RequestTiming& t = *dir_.frontend_process->timing(id);
  t.path = path;
  t.rank = d->rank;
  t.cached_tokens = d->cached_tokens;
  t.routed = rt_.now();
  nlohmann::json routed{{"request", id},
                        {"path", path == PrefillPath::local ? "local" : "prefill_worker"},
                        {"rank", d->rank},
                        {"cached_tokens", d->cached_tokens}};
  if (prefill_instance && prefill_down_.size() > 1) routed["prefill_instance"] = *prefill_instance;
  rt_.record("router", "routed", std::move(routed));
  view_.routed(d->rank, request.prompt_tokens, static_cast<std::int64_t>(request.prompt_hashes.size()));
  s.set_path(path == PrefillPath::local ? proto::PREFILL_PATH_LOCAL : proto::PREFILL_PATH_PREFILL);
  *s.mutable_spec() = to_spec(request);
  control_.send(dir_.router, dir_.rank(d->rank).address, std::move(msg));
}

void RouterProcess::cancel(const proto::Cancel& c) {
  const RequestId id = c.request_id();
  const auto queued = std::find_if(pending_.begin(), pending_.end(), [id](const RequestState& r) { return r.id == id; });
  const auto placed = placed_.find(id);
  if (queued != pending_.end() || placed == placed_.end()) {
    if (queued != pending_.end()) pending_.erase(queued);
    end_request(control_, dir_, dir_.router, id, c.reason());
    return;
  }
  proto::ControlMessage m;
  *m.mutable_cancel() = c;
  m.mutable_cancel()->set_rank(placed->second);
  control_.send(dir_.router, dir_.rank(placed->second).address, std::move(m));
}

std::optional<std::size_t> RouterProcess::choose_prefill() const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < prefill_down_.size(); ++i) {
    if (prefill_down_[i]) continue;
    if (!best || prefill_outstanding_[i] < prefill_outstanding_[*best]) best = i;
  }
  return best;
}

void RouterProcess::forget_prefill(RequestId id) {
  const auto sent = prefill_sent_.find(id);
  if (sent == prefill_sent_.end()) return;
  prefill_outstanding_[sent->second.first] -= sent->second.second;
  prefill_sent_.erase(sent);
}

bool RouterProcess::any_prefill_up() const { return router_.prefill_worker_up() && choose_prefill().has_value(); }

void RouterProcess::ended(RequestId id) {
  placed_.erase(id);
  retry_pending();
}

void RouterProcess::retry_pending() {
  if (retrying_) return;  // a retry that finishes a request would otherwise re-enter
  retrying_ = true;
  std::deque<RequestState> again;
  again.swap(pending_);
  for (auto& r : again) route(std::move(r));
  retrying_ = false;
}

void RouterProcess::requeue(RequestState request) {
  forget_prefill(request.id);
  pending_.push_back(std::move(request));
}

void RouterProcess::drop_pending(RequestId id) {
  std::erase_if(pending_, [id](const RequestState& r) { return r.id == id; });
}

std::optional<std::int64_t> RouterProcess::take_resume(RequestId id) {
  const auto it = resume_from_.find(id);
  if (it == resume_from_.end()) return std::nullopt;
  const std::int64_t from = it->second;
  resume_from_.erase(it);
  return from;
}

std::string RouterProcess::dead_why(std::int32_t rank) const {
  const auto why = dead_why_.find(rank);
  return why != dead_why_.end() ? why->second : "";
}

void RouterProcess::check_health(std::int32_t rank, HealthDone done) {
  if (rank < 0 || rank >= static_cast<std::int32_t>(dir_.ranks.size())) {
    throw std::out_of_range("health check of unknown rank " + std::to_string(rank));
  }
  auto& waiting = health_waiting_[rank];
  waiting.push_back(std::move(done));
  if (waiting.size() > 1) return;  // one check in flight answers every caller
  proto::ControlMessage m;
  m.mutable_health_check()->set_rank(rank);
  m.mutable_health_check()->set_at_ns(rt_.now().since_start().ns());
  control_.send(dir_.router, dir_.rank(rank).address, std::move(m));
}

void RouterProcess::answer_health(std::int32_t rank, bool healthy, const std::string& detail) {
  const auto it = health_waiting_.find(rank);
  if (it == health_waiting_.end()) return;
  const std::vector<HealthDone> waiting = std::move(it->second);
  health_waiting_.erase(it);
  for (const HealthDone& done : waiting) done(healthy, detail);
}

}  // namespace nvl::engine
