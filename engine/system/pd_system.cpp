#include "engine/system/pd_system.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>

#include "engine/model/kv_footprint.h"
#include "engine/system/control_codec.h"

namespace nvl::engine {

namespace {
constexpr std::uint32_t kRouterPort = 7000;
constexpr std::uint32_t kPrefillPort = 7001;
constexpr std::uint32_t kFrontendPort = 7002;
constexpr std::uint32_t kRankPortBase = 10000;  // + the rank's GPU id

RouterConfig router_config(RouterConfig cfg, const PdDeployment& d) {
  if (d.decode.empty()) throw std::invalid_argument("P/D system: needs at least one decoding instance");
  cfg.block_tokens = d.decode.front().group.block_tokens;
  cfg.prefill_worker = cfg.prefill_worker && !d.prefill.empty();
  return cfg;
}

std::int32_t ranks_of(const PdDeployment& d) {
  std::size_t ranks = 0;
  for (const DecodeInstance& i : d.decode) {
    const auto tp = static_cast<std::size_t>(std::max<std::int64_t>(1, i.group.attention_tp));
    if (i.gpus.empty() || i.gpus.size() % tp != 0) {
      throw std::invalid_argument("P/D system: decoding instance " + i.name + " needs a positive multiple of its TP degree in GPUs");
    }
    ranks += i.gpus.size() / tp;
  }
  if (ranks == 0) throw std::invalid_argument("P/D system: needs at least one decoding GPU");
  return static_cast<std::int32_t>(ranks);
}

bool same_load(const proto::LoadReport& a, const proto::LoadReport& b) {
  return a.running() == b.running() && a.waiting() == b.waiting() && a.tokens_in_flight() == b.tokens_in_flight() &&
         a.free_kv_blocks() == b.free_kv_blocks() && a.healthy() == b.healthy();
}

// The message's kind as control.proto names it, for logs and errors.
std::string kind_of(const proto::ControlMessage& m) {
  const auto* field = proto::ControlMessage::descriptor()->FindFieldByNumber(m.body_case());
  return field != nullptr ? field->name() : "empty";
}

std::uint64_t request_of(const proto::ControlMessage& m) {
  switch (m.body_case()) {
    case proto::ControlMessage::kSubmit: return m.submit().spec().request_id();
    case proto::ControlMessage::kSchedule: return m.schedule().spec().request_id();
    case proto::ControlMessage::kTransferDone: return m.transfer_done().request_id();
    case proto::ControlMessage::kTransferReady: return m.transfer_ready().request_id();
    case proto::ControlMessage::kCancel: return m.cancel().request_id();
    case proto::ControlMessage::kTokens: return m.tokens().request_id();
    default: return 0;
  }
}
}  // namespace

PdSystem::PdSystem(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, hal::Rdma* rdma,
                   PdDeployment d, TokenStream on_tokens, RequestDone on_done, hal::Network* network)
    : rt_(rt),
      cfg_(d.system),
      on_tokens_(std::move(on_tokens)),
      on_done_(std::move(on_done)),
      router_(ranks_of(d), router_config(d.system.router, d)),
      view_(ranks_of(d)),
      control_(rt, network, [this](const proto::ControlMessage& m, const std::string& why) { on_lost(m, why); }),
      rdma_(rdma),
      kv_bytes_per_token_(kv_bytes_per_token(model, d.decode.front().group.kv_dtype).total()) {
  if (cfg_.load_report_interval <= rt::Duration()) {
    throw std::invalid_argument("P/D system: the load report interval must be positive");
  }
  const hal::Device& first = *d.decode.front().gpus.front();
  cfg_.fetch.gpu_pool = cfg_.kv_pool;
  cfg_.fetch.recompute_tokens_per_s =
      first.info().peak(hal::DType::fp8) * cfg_.prefill_efficiency / (2.0 * static_cast<double>(model.active_params()));
  // The router and the frontend sit on the first decoding GPU's host; each rank speaks from its GPU's host.
  const hal::HostId router_host = first.info().host;
  router_address_ = hal::Address{router_host, kRouterPort};
  frontend_address_ = hal::Address{router_host, kFrontendPort};
  control_.listen(router_address_, [this](const proto::ControlMessage& m) { on_router(m); });
  control_.listen(frontend_address_, [this](const proto::ControlMessage& m) { on_frontend(m); });
  for (DecodeInstance& i : d.decode) add_decode_instance(rt, model, collectives, std::move(i));
  last_reported_.resize(rank_addresses_.size());
  if (!d.prefill.empty() && rdma == nullptr) {
    throw std::invalid_argument("a prefill instance needs RDMA to move its KV to the DP ranks");
  }
  for (PrefillInstance& p : d.prefill) add_prefill_instance(rt, model, collectives, std::move(p));
  start_recovery();
  for (auto& g : groups_) g->start();
  for (auto& p : prefills_) p.worker->start();
  reporting_ = true;
  rt_.call_after(rt::Duration(), [this] { publish_loads(); });  // the router's first view
}

void PdSystem::add_decode_instance(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives,
                                   DecodeInstance d) {
  const std::size_t g = groups_.size();
  const auto base = static_cast<std::int32_t>(slots_.size());
  for (hal::Device* gpu : d.gpus) devices_[gpu->id()] = gpu;
  d.group.first_rank = base;
  groups_.push_back(std::make_unique<NormalWorkerGroup>(
      rt, model, d.gpus, collectives, d.group,
      [this, base](std::int32_t local, const StepOutcome& o) { on_normal_tokens(base + local, o); },
      [this, base](std::int32_t local, RequestId id, const std::string& why) {
        end_request(rank_address(base + local), id, why);
      }));
  NormalWorkerGroup& group = *groups_.back();
  first_rank_.push_back(base);
  routed_to_instance_.push_back(0);
  for (std::int32_t local = 0; local < group.ranks(); ++local) {
    const std::int32_t r = base + local;
    slots_.push_back(RankSlot{.group = g, .local = local, .local_prefill = d.local_prefill});
    const hal::Device& gpu = *devices_.at(group.device_of(local));
    rank_addresses_.push_back(hal::Address{gpu.info().host, kRankPortBase + static_cast<std::uint32_t>(gpu.id())});
    control_.listen(rank_addresses_.back(), [this, r](const proto::ControlMessage& m) { on_rank(r, m); });
    group.kv(local).subscribe([this, r](const KvEvent& e) {
      proto::ControlMessage m;
      *m.mutable_kv_event() = to_message(e);
      control_.send(rank_address(r), router_address_, std::move(m));
    });
  }
}

void PdSystem::add_prefill_instance(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives,
                                    PrefillInstance p) {
  const std::size_t i = prefills_.size();
  for (hal::Device* gpu : p.gpus) devices_[gpu->id()] = gpu;
  p.worker.hold_kv_for_transfer = true;  // its KV is read by the transfer after the first token
  PrefillSlot& slot = prefills_.emplace_back();
  slot.gpus = p.gpus;
  slot.worker = std::make_unique<PrefillWorker>(
      rt, model, p.gpus, collectives, p.worker,
      [this, i](const StepOutcome& o) {
        ++prefills_[i].prefilled;
        forget_prefill(o.id);
        const auto it = timings_.find(o.id);
        if (it != timings_.end()) it->second.prefill_done = rt_.now();
      },
      [this](RequestId id, std::int64_t done, std::int64_t total, std::uint64_t bytes) {
        on_kv_ready(id, done, total, bytes);
      },
      [this, i](RequestId id, const std::string& why) {
        // The prefill instance cannot hold it: the decode rank, whose KV room is taken, prefills it.
        const auto it = moving_.find(id);
        if (it == moving_.end()) return;
        const std::int32_t rank = it->second.rank;
        moving_.erase(it);
        forget_prefill(id);
        proto::ControlMessage m;
        proto::KvTransferDone& done = *m.mutable_transfer_done();
        done.set_request_id(id);
        done.set_to_rank(rank);
        done.set_ok(false);
        done.set_error(why);
        control_.send(prefills_[i].address, rank_address(rank), std::move(m));
      });
  // Every instance listens on its own first GPU's host (instances sharing a host get their own ports).
  slot.address = hal::Address{p.gpus.front()->info().host, kPrefillPort + static_cast<std::uint32_t>(100 * i)};
  control_.listen(slot.address, [this, i](const proto::ControlMessage& m) { on_prefill(i, m); });
  // Stage s's layers live on its tp GPUs, which push them.
  const PrefillWorker& worker = *slot.worker;
  for (std::int64_t stage = 0; stage < worker.pp(); ++stage) {
    std::vector<hal::DeviceId> sources;
    for (std::int64_t r = 0; r < worker.tp(); ++r) sources.push_back(p.gpus[static_cast<std::size_t>(stage * worker.tp() + r)]->id());
    slot.transfers.emplace_back(*rdma_, std::move(sources), cfg_.transfer);
  }
}

std::optional<std::int32_t> PdSystem::rank_of_gpu(hal::DeviceId gpu) const {
  for (std::int32_t r = 0; r < ranks(); ++r) {
    for (const hal::DeviceId d : group_of(r).devices_of(local_rank(r))) {
      if (d == gpu) return r;
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> PdSystem::prefill_of_gpu(hal::DeviceId gpu) const {
  for (std::size_t i = 0; i < prefills_.size(); ++i) {
    for (const hal::Device* d : prefills_[i].gpus) {
      if (d->id() == gpu) return i;
    }
  }
  return std::nullopt;
}

std::uint64_t PdSystem::transfer_bytes() const {
  std::uint64_t bytes = 0;
  for (const PrefillSlot& p : prefills_) {
    for (const KvTransfer& t : p.transfers) bytes += t.bytes_moved();
  }
  return bytes;
}

// ---- endpoints ------------------------------------------------------------------------------------

void PdSystem::on_router(const proto::ControlMessage& m) {
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
      router_cancel(m.cancel());
      return;
    case proto::ControlMessage::kHealthStatus: {
      answer_health(m.health_status().rank(), m.health_status().healthy(), m.health_status().detail());
      return;
    }
    default:
      throw std::logic_error("router: unexpected control message " + kind_of(m));
  }
}

void PdSystem::on_rank(std::int32_t rank, const proto::ControlMessage& m) {
  arm_load_reports();
  switch (m.body_case()) {
    case proto::ControlMessage::kSchedule:
      rank_schedule(rank, m.schedule());
      return;
    case proto::ControlMessage::kCancel:
      rank_cancel(rank, m.cancel());
      return;
    case proto::ControlMessage::kTransferReady: {
      const auto it = timings_.find(m.transfer_ready().request_id());
      if (it != timings_.end()) it->second.transfer_bytes += m.transfer_ready().bytes();
      return;
    }
    case proto::ControlMessage::kTransferDone:
      rank_transfer_done(rank, m.transfer_done());
      return;
    case proto::ControlMessage::kHealthCheck: {
      proto::ControlMessage reply;
      proto::HealthStatus& s = *reply.mutable_health_status();
      s.set_rank(rank);
      s.set_healthy(group_of(rank).load(local_rank(rank)).healthy);
      control_.send(rank_address(rank), router_address_, std::move(reply));
      return;
    }
    default:
      throw std::logic_error("DP rank: unexpected control message " + kind_of(m));
  }
}

void PdSystem::on_prefill(std::size_t instance, const proto::ControlMessage& m) {
  switch (m.body_case()) {
    case proto::ControlMessage::kSchedule:
      prefill_schedule(instance, m.schedule());
      return;
    case proto::ControlMessage::kCancel: {
      const RequestId id = m.cancel().request_id();
      moving_.erase(id);  // pushes still in flight land unheeded
      forget_prefill(id);
      prefill(instance).release_kv(id);
      prefill(instance).cancel(id);
      return;
    }
    default:
      throw std::logic_error("prefill worker: unexpected control message " + kind_of(m));
  }
}

void PdSystem::on_frontend(const proto::ControlMessage& m) {
  if (!m.has_tokens()) throw std::logic_error("frontend: unexpected control message " + kind_of(m));
  on_chunk(m.tokens());
}

void PdSystem::on_lost(const proto::ControlMessage& m, const std::string& why) {
  switch (m.body_case()) {
    case proto::ControlMessage::kKvEvent:
    case proto::ControlMessage::kLoad:
    case proto::ControlMessage::kTransferReady:
      // The router's view or a progress note goes stale, which routing and the transfer tolerate.
      rt_.record("control", "message_lost", {{"kind", kind_of(m)}, {"error", why}}, rt::Severity::warning);
      return;
    case proto::ControlMessage::kHealthCheck:
    case proto::ControlMessage::kHealthStatus: {
      const std::int32_t rank = m.has_health_check() ? m.health_check().rank() : m.health_status().rank();
      answer_health(rank, false, "health check lost: " + why);
      return;
    }
    case proto::ControlMessage::kCancel:
      abandon(m.cancel().request_id(), "cancelled");
      return;
    case proto::ControlMessage::kSchedule:
      if (m.schedule().path() == proto::PREFILL_PATH_PREFILL && m.schedule().rank() < 0) {
        // The prefill worker is out of reach: the decode rank, whose KV room is taken, prefills it.
        const RequestId id = m.schedule().spec().request_id();
        moving_.erase(id);
        reprefill(m.schedule().decode_rank(), id, "prefill_worker_unreachable", why);
        return;
      }
      abandon(request_of(m), "control message lost: " + why);
      return;
    case proto::ControlMessage::kTransferDone:
      // The decode rank cannot know whether its KV arrived: it prefills the prompt itself.
      reprefill(m.transfer_done().to_rank(), m.transfer_done().request_id(), "kv_transfer_unconfirmed", why);
      return;
    default:
      abandon(request_of(m), "control message lost: " + why);
  }
}

// ---- router ---------------------------------------------------------------------------------------

void PdSystem::route(RequestState request) {
  const RequestId id = request.id;
  if (!live(id)) return;  // cancelled while it waited for room
  const auto d = router_.route(request.prompt_hashes, request.prompt_tokens, view_.loads());
  if (!d) {
    end_request(router_address_, id, "no healthy DP rank to serve it");
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
  const LocalPrefill mode = slot(d->rank).local_prefill;
  PrefillPath path = mode == LocalPrefill::always ? PrefillPath::local : d->path;
  if (path == PrefillPath::local) {
    const std::vector<RankMatch> matches = d->matches.empty() ? router_.index().match(request.prompt_hashes) : d->matches;
    const std::int64_t own_blocks = matches[static_cast<std::size_t>(d->rank)].grace_blocks;
    FetchDecision f;
    if (rdma_ != nullptr && cfg_.fetch_remote_prefix) {
      f = plan_fetch(matches, d->rank, block_tokens(), kv_bytes_per_token_, cfg_.fetch);
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
    if (mode != LocalPrefill::always && any_prefill_up() && (long_prompt || mode == LocalPrefill::never)) {
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
    prefill_instance = choose_prefill();
    if (prefill_instance) {
      prefills_[*prefill_instance].outstanding_tokens += request.prompt_tokens;
      prefill_sent_[id] = {*prefill_instance, request.prompt_tokens};
      s.set_prefill_instance(static_cast<std::int32_t>(*prefill_instance));
    } else {
      path = PrefillPath::local;  // every prefill instance is down: the rank prefills it
    }
  }
  ++routed_[static_cast<std::size_t>(path)];
  ++routed_to_instance_[slot(d->rank).group];
  RequestTiming& t = timings_.at(id);
  t.path = path;
  t.rank = d->rank;
  t.cached_tokens = d->cached_tokens;
  t.routed = rt_.now();
  nlohmann::json routed{{"request", id},
                        {"path", path == PrefillPath::local ? "local" : "prefill_worker"},
                        {"rank", d->rank},
                        {"cached_tokens", d->cached_tokens}};
  if (prefill_instance && prefills_.size() > 1) routed["prefill_instance"] = *prefill_instance;
  rt_.record("router", "routed", std::move(routed));
  view_.routed(d->rank, request.prompt_tokens, static_cast<std::int64_t>(request.prompt_hashes.size()));
  s.set_path(path == PrefillPath::local ? proto::PREFILL_PATH_LOCAL : proto::PREFILL_PATH_PREFILL);
  *s.mutable_spec() = to_spec(request);
  control_.send(router_address_, rank_address(d->rank), std::move(msg));
}

void PdSystem::router_cancel(const proto::Cancel& c) {
  const RequestId id = c.request_id();
  const auto queued = std::find_if(pending_.begin(), pending_.end(), [id](const RequestState& r) { return r.id == id; });
  const auto it = timings_.find(id);
  if (queued != pending_.end() || it == timings_.end() || it->second.rank < 0) {
    if (queued != pending_.end()) pending_.erase(queued);
    end_request(router_address_, id, c.reason());
    return;
  }
  proto::ControlMessage m;
  *m.mutable_cancel() = c;
  m.mutable_cancel()->set_rank(it->second.rank);
  control_.send(router_address_, rank_address(it->second.rank), std::move(m));
}

// ---- DP ranks -------------------------------------------------------------------------------------

void PdSystem::rank_schedule(std::int32_t rank, const proto::ScheduleOnRank& s) {
  RequestState request = from_spec(s.spec());
  if (!live(request.id)) return;
  if (redirect(rank, request, s.path() == proto::PREFILL_PATH_PREFILL)) return;
  if (s.path() == proto::PREFILL_PATH_PREFILL) {
    const auto instance = static_cast<std::size_t>(s.prefill_instance());
    if (prefills_.at(instance).down) {
      // Routed to a prefill instance before it was declared dead: the rank prefills it itself.
      forget_prefill(request.id);
      nlohmann::json instead{{"request", request.id}, {"rank", rank}, {"why", *prefills_[instance].down}};
      if (instance > 0) instead["instance"] = instance;
      rt_.record("pd", "local_prefill_instead", std::move(instead), rt::Severity::warning);
      const auto t = timings_.find(request.id);
      if (t != timings_.end()) {
        t->second.path = PrefillPath::local;
        t->second.reprefilled = true;
      }
      group_of(rank).submit(local_rank(rank), std::move(request));
      return;
    }
    rank_receive(rank, instance, std::move(request));
    return;
  }
  if (s.fetch_from_rank() < 0) {
    group_of(rank).submit(local_rank(rank), std::move(request));
    return;
  }
  // Fetch the prefix a peer holds first (GPU peer-to-peer over NVLink, or a one-sided RDMA read of
  // the peer's Grace memory), then prefill the rest.
  const bool from_grace = s.fetch_from_grace();
  hal::RdmaOp op;
  op.local = region_of(device_of(s.fetch_from_rank()), from_grace);
  op.remote = region_of(device_of(rank), false);
  op.bytes = static_cast<std::uint64_t>(s.fetch_blocks()) * static_cast<std::uint64_t>(block_tokens()) * kv_bytes_per_token_;
  op.path = from_grace ? hal::RdmaPath::scale_out : hal::RdmaPath::nvlink;
  op.name = "kv.fetch.req" + std::to_string(request.id);
  const std::int64_t prefix_blocks = s.cached_prefix_tokens() / block_tokens() + s.fetch_blocks();
  rdma_->write(op, [this, rank, prefix_blocks, request = std::move(request)](const hal::HalError* error) mutable {
    if (!live(request.id)) return;  // cancelled while the prefix moved
    if (error == nullptr) {
      kv(rank).import(std::span(request.prompt_hashes).first(static_cast<std::size_t>(prefix_blocks)));
    } else {
      rt_.record("pd", "prefix_fetch_failed", {{"request", request.id}, {"error", error->what()}},
                 rt::Severity::warning);  // recomputed instead
    }
    if (redirect(rank, request, false)) return;  // the rank was declared dead meanwhile
    group_of(rank).submit(local_rank(rank), std::move(request));
  });
}

void PdSystem::rank_receive(std::int32_t rank, std::size_t instance, RequestState request) {
  const RequestId id = request.id;
  if (!group_of(rank).fits(local_rank(rank), request)) {
    end_request(rank_address(rank), id,
                "prompt and output need more KV blocks than DP rank " + std::to_string(rank) + " holds");
    return;
  }
  const auto room = group_of(rank).receive(local_rank(rank), request);
  if (!room) {
    forget_prefill(id);                      // the router chooses a prefill instance again
    pending_.push_back(std::move(request));  // back to the router's queue: routed again when KV frees up
    return;
  }
  Moving m;
  m.rank = rank;
  m.prefill = instance;
  // Only the part of the prompt the decode rank does not already hold has to move.
  const std::int64_t held = room->gpu_hit_tokens + room->grace_hit_tokens;
  m.share = static_cast<double>(request.prompt_tokens - held) / static_cast<double>(request.prompt_tokens);
  moving_[id] = m;
  proto::ControlMessage msg;
  proto::ScheduleOnRank& s = *msg.mutable_schedule();
  s.set_rank(-1);
  s.set_decode_rank(rank);
  s.set_path(proto::PREFILL_PATH_PREFILL);
  s.set_fetch_from_rank(-1);
  *s.mutable_spec() = to_spec(request);
  const std::int64_t held_blocks = held / block_tokens();
  if (held_blocks == 0 || rdma_ == nullptr) {
    control_.send(rank_address(rank), prefills_[instance].address, std::move(msg));
    return;
  }
  // The prefill worker attends over that prefix too: the rank writes it to the prefill worker
  // (one-sided RDMA) instead of the prefill worker recomputing it.
  hal::RdmaOp op;
  op.local = region_of(device_of(rank), false);
  op.remote = prefill_region(instance);
  op.bytes = static_cast<std::uint64_t>(held) * kv_bytes_per_token_;
  op.path = hal::RdmaPath::scale_out;
  op.name = "kv.prefix_to_prefill.req" + std::to_string(id);
  rdma_->write(op, [this, rank, id, instance, held_blocks, msg = std::move(msg)](const hal::HalError* error) mutable {
    if (!moving_.contains(id)) return;  // cancelled meanwhile
    if (error == nullptr) {
      msg.mutable_schedule()->set_cached_prefix_tokens(static_cast<std::uint32_t>(held_blocks * block_tokens()));
    } else {
      rt_.record("pd", "prefix_to_prefill_failed", {{"request", id}, {"error", error->what()}},
                 rt::Severity::warning);  // the prefill worker recomputes it
    }
    control_.send(rank_address(rank), prefills_[instance].address, std::move(msg));
  });
}

void PdSystem::rank_cancel(std::int32_t rank, const proto::Cancel& c) {
  const RequestId id = c.request_id();
  group_of(rank).cancel(local_rank(rank), id);  // wherever it is on the rank: queued, prefilling, receiving, decoding
  const auto moving = moving_.find(id);
  if (moving != moving_.end()) {
    proto::ControlMessage m;
    *m.mutable_cancel() = c;
    control_.send(rank_address(rank), prefills_[moving->second.prefill].address, std::move(m));
  }
  end_request(rank_address(rank), id, c.reason());
}

void PdSystem::rank_transfer_done(std::int32_t rank, const proto::KvTransferDone& d) {
  const RequestId id = d.request_id();
  const RequestState* r = scheduler(rank).find(id);
  if (r == nullptr || r->phase != RequestState::Phase::receiving) return;  // cancelled meanwhile
  const auto t = timings_.find(id);
  if (d.ok()) {
    if (t != timings_.end()) t->second.kv_arrived = rt_.now();
    group_of(rank).received(local_rank(rank), id);
    return;
  }
  // Failed on both paths: the request goes on, prefilled on its DP rank.
  reprefill(rank, id, "kv_transfer_failed", d.error());
}

void PdSystem::reprefill(std::int32_t rank, RequestId id, std::string_view cause, const std::string& error) {
  const RequestState* r = scheduler(rank).find(id);
  if (r == nullptr || r->phase != RequestState::Phase::receiving) return;  // cancelled meanwhile
  rt_.record("pd", cause, {{"request", id}, {"rank", rank}, {"error", error}, {"next", "reprefill"}},
             rt::Severity::warning);
  const auto t = timings_.find(id);
  if (t != timings_.end()) t->second.reprefilled = true;
  group_of(rank).receive_failed(local_rank(rank), id);
}

void PdSystem::on_normal_tokens(std::int32_t rank, const StepOutcome& o) {
  arm_load_reports();
  if (o.new_output_tokens == 0 && !o.finished) return;
  std::int64_t& produced = produced_[o.id];
  proto::ControlMessage m;
  proto::TokenChunk& c = *m.mutable_tokens();
  c.set_request_id(o.id);
  c.set_first_index(static_cast<std::uint32_t>(produced));
  c.set_count(static_cast<std::uint32_t>(o.new_output_tokens));
  c.set_finished(o.finished);
  if (o.finished) c.set_finish_reason("length");
  produced += o.new_output_tokens;
  if (o.finished) produced_.erase(o.id);
  control_.send(rank_address(rank), frontend_address_, std::move(m));
}

void PdSystem::publish_loads() {
  bool changed = false;
  for (std::int32_t r = 0; r < ranks(); ++r) {
    proto::LoadReport report = to_report(r, group_of(r).load(local_rank(r)), rt_.now());
    std::optional<proto::LoadReport>& last = last_reported_[static_cast<std::size_t>(r)];
    if (last && same_load(*last, report)) continue;
    changed = true;
    last = report;
    proto::ControlMessage m;
    *m.mutable_load() = std::move(report);
    control_.send(rank_address(r), router_address_, std::move(m));
  }
  // Nothing changed: stop until a rank's next event re-arms it.
  reporting_ = changed;
  if (reporting_) rt_.call_after(cfg_.load_report_interval, [this] { publish_loads(); });
}

void PdSystem::arm_load_reports() {
  if (reporting_) return;
  reporting_ = true;
  rt_.call_after(cfg_.load_report_interval, [this] { publish_loads(); });
}

// ---- prefill worker -------------------------------------------------------------------------------

void PdSystem::prefill_schedule(std::size_t instance, const proto::ScheduleOnRank& s) {
  RequestState request = from_spec(s.spec());
  if (!moving_.contains(request.id)) return;  // cancelled on the way
  const std::int64_t held_blocks = s.cached_prefix_tokens() / block_tokens();
  PrefillWorker& worker = prefill(instance);
  if (held_blocks > 0) worker.kv().import(std::span(request.prompt_hashes).first(static_cast<std::size_t>(held_blocks)));
  worker.submit(std::move(request));
}

void PdSystem::on_kv_ready(RequestId id, std::int64_t layers_done, std::int64_t total, std::uint64_t bytes_so_far) {
  const auto it = moving_.find(id);
  if (it == moving_.end()) return;
  Moving& m = it->second;
  if (layers_done <= m.layers_sent) return;  // a step retried after a failure: these layers were sent
  const std::uint64_t ready = bytes_so_far - m.sent;
  m.sent = bytes_so_far;
  m.all_layers = layers_done >= total;
  const std::int64_t first_layer = m.layers_sent;
  m.layers_sent = layers_done;
  const auto bytes = static_cast<std::uint64_t>(std::llround(static_cast<double>(ready) * m.share));
  if (bytes == 0) {
    maybe_received(id);
    return;
  }
  const std::int32_t rank = m.rank;
  const std::size_t instance = m.prefill;
  // The layer group lies in one pipeline stage: the one holding its first layer.
  const PrefillWorker& worker = prefill(instance);
  std::int64_t stage = 0;
  while (stage + 1 < worker.pp() && worker.layers(stage).end_layer <= first_layer) ++stage;
  // Every GPU of an attention-TP rank gets its share of each block: all of it under MLA, which each
  // TP rank reads whole, 1/tp of it for split GQA heads.
  const NormalWorkerGroup& group = group_of(rank);
  const std::uint64_t gpu_bytes = bytes * group.gpu_block_bytes() / group.block_bytes();
  const std::vector<hal::DeviceId> dests = group.devices_of(local_rank(rank));
  m.pushes += dests.size();  // all counted first: a push that settles at once must not see the count at zero
  for (const hal::DeviceId dest : dests) {
    prefills_[instance].transfers[static_cast<std::size_t>(stage)].push(
        id, dest, gpu_bytes,
        [this, id, rank, instance, first_layer, layers_done, gpu_bytes](const hal::HalError* error, std::int64_t retries) {
          const auto mit = moving_.find(id);
          if (mit == moving_.end()) return;
          --mit->second.pushes;
          const auto t = timings_.find(id);
          if (t != timings_.end()) t->second.transfer_retries += retries;
          if (error != nullptr) {
            if (mit->second.error.empty()) mit->second.error = error->what();
          } else {
            proto::ControlMessage msg;
            proto::KvTransferReady& r = *msg.mutable_transfer_ready();
            r.set_request_id(id);
            r.set_to_rank(rank);
            r.set_first_layer(static_cast<std::uint32_t>(first_layer));
            r.set_last_layer(static_cast<std::uint32_t>(layers_done - 1));
            r.set_bytes(gpu_bytes);
            control_.send(prefills_[instance].address, rank_address(rank), std::move(msg));
          }
          maybe_received(id);
        });
  }
}

void PdSystem::maybe_received(RequestId id) {
  const auto it = moving_.find(id);
  if (it == moving_.end() || !it->second.all_layers || it->second.pushes > 0) return;
  const Moving m = it->second;
  moving_.erase(it);
  prefill(m.prefill).release_kv(id);  // every push has landed (or failed): the prefill worker's blocks are free
  proto::ControlMessage msg;
  proto::KvTransferDone& d = *msg.mutable_transfer_done();
  d.set_request_id(id);
  d.set_to_rank(m.rank);
  d.set_ok(m.error.empty());
  d.set_error(m.error);
  d.set_transport(cfg_.transfer.path == hal::RdmaPath::nvlink ? proto::KV_TRANSPORT_NVLINK : proto::KV_TRANSPORT_RDMA);
  control_.send(prefills_[m.prefill].address, rank_address(m.rank), std::move(msg));
}

std::optional<std::size_t> PdSystem::choose_prefill() const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < prefills_.size(); ++i) {
    if (prefills_[i].down) continue;
    if (!best || prefills_[i].outstanding_tokens < prefills_[*best].outstanding_tokens) best = i;
  }
  return best;
}

void PdSystem::forget_prefill(RequestId id) {
  const auto sent = prefill_sent_.find(id);
  if (sent == prefill_sent_.end()) return;
  prefills_[sent->second.first].outstanding_tokens -= sent->second.second;
  prefill_sent_.erase(sent);
}

bool PdSystem::any_prefill_up() const { return router_.prefill_worker_up() && choose_prefill().has_value(); }

// ---- frontend -------------------------------------------------------------------------------------

void PdSystem::submit(RequestState request) {
  RequestTiming& t = timings_[request.id];
  t.id = request.id;
  t.prompt_tokens = request.prompt_tokens;
  t.arrival = rt_.now();
  arm_load_reports();
  if (health_) health_->watch();  // the periodic check stops while idle; work brings it back
  proto::ControlMessage m;
  *m.mutable_submit()->mutable_spec() = to_spec(request);
  control_.send(frontend_address_, router_address_, std::move(m));
}

bool PdSystem::cancel(RequestId id) {
  if (!timings_.contains(id) || cancelled_.contains(id)) return false;
  cancelled_.insert(id);
  rt_.record("frontend", "cancel", {{"request", id}});
  proto::ControlMessage m;
  m.mutable_cancel()->set_request_id(id);
  m.mutable_cancel()->set_reason("cancelled");
  m.mutable_cancel()->set_rank(-1);
  control_.send(frontend_address_, router_address_, std::move(m));
  return true;
}

void PdSystem::check_health(std::int32_t rank, HealthDone done) {
  if (rank < 0 || rank >= ranks()) throw std::out_of_range("health check of unknown rank " + std::to_string(rank));
  auto& waiting = health_waiting_[rank];
  waiting.push_back(std::move(done));
  if (waiting.size() > 1) return;  // one check in flight answers every caller
  proto::ControlMessage m;
  m.mutable_health_check()->set_rank(rank);
  m.mutable_health_check()->set_at_ns(rt_.now().since_start().ns());
  control_.send(router_address_, rank_address(rank), std::move(m));
}

void PdSystem::on_chunk(const proto::TokenChunk& c) {
  const auto it = timings_.find(c.request_id());
  if (it == timings_.end()) return;
  RequestTiming& t = it->second;
  const bool done_ok = c.finished() && c.finish_reason() == "length";
  if (c.count() > 0) {
    const bool first = c.first_index() == 0;
    if (first) t.first_token = rt_.now();
    if (c.first_index() <= 1 && c.first_index() + c.count() > 1) t.first_decode = rt_.now();
    t.output_tokens += c.count();
    on_tokens_(c.request_id(), c.count(), first, done_ok);
  }
  if (c.finished()) finish(c.request_id(), done_ok ? "" : c.finish_reason());
}

void PdSystem::end_request(hal::Address from, RequestId id, const std::string& why) {
  proto::ControlMessage m;
  proto::TokenChunk& c = *m.mutable_tokens();
  c.set_request_id(id);
  c.set_finished(true);
  c.set_finish_reason(why);
  control_.send(from, frontend_address_, std::move(m));
}

void PdSystem::abandon(RequestId id, const std::string& why) {
  const auto it = timings_.find(id);
  if (it == timings_.end()) return;
  if (it->second.rank >= 0) group_of(it->second.rank).cancel(local_rank(it->second.rank), id);
  const auto moving = moving_.find(id);
  if (moving != moving_.end()) {
    prefill(moving->second.prefill).release_kv(id);
    prefill(moving->second.prefill).cancel(id);
    moving_.erase(moving);
  }
  forget_prefill(id);
  std::erase_if(pending_, [id](const RequestState& r) { return r.id == id; });
  rt_.record("control", "request_abandoned", {{"request", id}, {"reason", why}}, rt::Severity::warning);
  finish(id, why);
}

void PdSystem::answer_health(std::int32_t rank, bool healthy, const std::string& detail) {
  const auto it = health_waiting_.find(rank);
  if (it == health_waiting_.end()) return;
  const std::vector<HealthDone> waiting = std::move(it->second);
  health_waiting_.erase(it);
  for (const HealthDone& done : waiting) done(healthy, detail);
}

void PdSystem::finish(RequestId id, const std::string& failure) {
  const auto it = timings_.find(id);
  if (it == timings_.end()) return;
  it->second.finished = rt_.now();
  it->second.failure = failure;
  const RequestTiming t = it->second;
  timings_.erase(it);
  cancelled_.erase(id);
  produced_.erase(id);
  on_done_(t);
  retry_pending();
  if (health_ && timings_.empty()) health_->pause();  // idle: no check keeps the run (or a test) going
}

void PdSystem::retry_pending() {
  if (retrying_) return;  // a retry that finishes a request would otherwise re-enter
  retrying_ = true;
  std::deque<RequestState> again;
  again.swap(pending_);
  for (auto& r : again) route(std::move(r));
  retrying_ = false;
}

hal::MemoryRegion PdSystem::prefill_region(std::size_t instance) {
  PrefillSlot& p = prefills_.at(instance);
  if (p.region.id == 0) p.region = rdma_->register_device_memory(p.gpus.front()->id(), cfg_.transfer.region_bytes);
  return p.region;
}

hal::MemoryRegion PdSystem::region_of(hal::DeviceId device, bool grace) {
  const auto key = std::pair(device, grace);
  const auto it = regions_.find(key);
  if (it != regions_.end()) return it->second;
  const hal::MemoryRegion r = grace ? rdma_->register_host_memory(devices_.at(device)->info().host, cfg_.transfer.region_bytes)
                                    : rdma_->register_device_memory(device, cfg_.transfer.region_bytes);
  return regions_.emplace(key, r).first->second;
}

}  // namespace nvl::engine
