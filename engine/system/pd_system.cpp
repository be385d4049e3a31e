#include "engine/system/pd_system.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/model/kv_footprint.h"
#include "engine/proto/control.pb.h"

namespace nvl::engine {

namespace {
constexpr std::uint32_t kRouterPort = 7000;
constexpr std::uint32_t kRankPortBase = 7100;

RouterConfig router_config(RouterConfig cfg, const PdDeployment& d) {
  cfg.block_tokens = d.normal.block_tokens;
  cfg.prefill_worker = cfg.prefill_worker && !d.prefill_gpus.empty();
  return cfg;
}
}  // namespace

PdSystem::PdSystem(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, hal::Rdma* rdma,
                   PdDeployment d, TokenStream on_tokens, RequestDone on_done, hal::Network* network)
    : rt_(rt),
      cfg_(d.system),
      on_tokens_(std::move(on_tokens)),
      on_done_(std::move(on_done)),
      router_(static_cast<std::int32_t>(d.normal_gpus.size()), router_config(d.system.router, d)),
      rdma_(rdma),
      normal_gpus_(d.normal_gpus),
      kv_bytes_per_token_(kv_bytes_per_token(model, d.normal.kv_dtype).total()),
      network_(network) {
  cfg_.fetch.recompute_tokens_per_s = d.normal_gpus.empty()
                                          ? 0
                                          : d.normal_gpus.front()->info().peak(hal::DType::fp8) *
                                                cfg_.prefill_efficiency / (2.0 * static_cast<double>(model.active_params()));
  normal_ = std::make_unique<NormalWorkerGroup>(
      rt, model, d.normal_gpus, collectives, d.normal,
      [this](std::int32_t rank, const StepOutcome& o) { on_normal_tokens(rank, o); },
      [this](std::int32_t, RequestId id, const std::string& why) { on_reject(id, why); });
  if (network_ != nullptr) {
    // The router sits on the first normal GPU's host; each rank speaks from its own GPU's host.
    router_address_ = hal::Address{d.normal_gpus.front()->info().host, kRouterPort};
    for (hal::Device* g : d.normal_gpus) {
      rank_addresses_.push_back(hal::Address{g->info().host, kRankPortBase + static_cast<std::uint32_t>(g->id())});
    }
    outbox_.resize(d.normal_gpus.size());
    network_->listen(router_address_, [this](hal::Address, std::string payload) {
      proto::KvEventMsg msg;
      if (!msg.ParseFromString(payload)) return;
      for (const std::uint64_t h : msg.hashes()) {
        router_.on_kv_event(KvEvent{msg.kind() == proto::KvEventMsg::KIND_STORED ? KvEvent::Kind::stored : KvEvent::Kind::removed,
                                    msg.tier() == proto::KvEventMsg::TIER_GPU ? KvTier::gpu : KvTier::grace, msg.rank(), h});
      }
    });
  }
  for (std::int32_t r = 0; r < normal_->ranks(); ++r) {
    normal_->kv(r).subscribe([this](const KvEvent& e) { publish(e); });
  }
  if (!d.prefill_gpus.empty()) {
    if (rdma == nullptr) throw std::invalid_argument("a prefill worker needs RDMA to move its KV to the DP ranks");
    std::vector<hal::DeviceId> sources;
    for (hal::Device* g : d.prefill_gpus) sources.push_back(g->id());
    d.prefill.hold_kv_for_transfer = true;  // its KV is read by the transfer after the first token
    prefill_ = std::make_unique<PrefillWorker>(
        rt, model, d.prefill_gpus, collectives, d.prefill, [this](const StepOutcome& o) { on_prefill_done(o); },
        [this](RequestId id, std::int64_t done, std::int64_t total, std::uint64_t bytes) {
          on_kv_ready(id, done, total, bytes);
        },
        [this](RequestId id, const std::string& why) { on_reject(id, why); });
    prefill_gpu_ = sources.front();
    transfer_.emplace(*rdma, std::move(sources), cfg_.transfer);
    prefill_->start();
  }
  normal_->start();
}

void PdSystem::publish(const KvEvent& e) {
  if (network_ == nullptr) {
    router_.on_kv_event(e);
    return;
  }
  auto& box = outbox_.at(static_cast<std::size_t>(e.rank));
  if (box.empty()) rt_.call_after(rt::Duration(), [this, rank = e.rank] { flush_events(rank); });
  box.push_back(e);
}

void PdSystem::flush_events(std::int32_t rank) {
  auto& box = outbox_.at(static_cast<std::size_t>(rank));
  // One message per run of events of the same kind and tier, in order.
  std::size_t i = 0;
  while (i < box.size()) {
    proto::KvEventMsg msg;
    msg.set_kind(box[i].kind == KvEvent::Kind::stored ? proto::KvEventMsg::KIND_STORED : proto::KvEventMsg::KIND_REMOVED);
    msg.set_tier(box[i].tier == KvTier::gpu ? proto::KvEventMsg::TIER_GPU : proto::KvEventMsg::TIER_GRACE);
    msg.set_rank(rank);
    std::size_t j = i;
    while (j < box.size() && box[j].kind == box[i].kind && box[j].tier == box[i].tier) msg.add_hashes(box[j++].hash);
    network_->send(rank_addresses_.at(static_cast<std::size_t>(rank)), router_address_, msg.SerializeAsString(),
                   [this, rank](const hal::HalError* error) {
                     // A lost event leaves the index stale, which routing tolerates; the log says so.
                     if (error != nullptr) {
                       rt_.record("router", "kv_event_lost", {{"rank", rank}, {"error", error->what()}},
                                  rt::Severity::warning);
                     }
                   });
    i = j;
  }
  box.clear();
}

void PdSystem::submit(RequestState request) {
  RequestTiming& t = timings_[request.id];
  t.id = request.id;
  t.prompt_tokens = request.prompt_tokens;
  t.arrival = rt_.now();
  route(std::move(request));
}

void PdSystem::route(RequestState request) {
  std::vector<RankLoad> loads;
  for (std::int32_t r = 0; r < normal_->ranks(); ++r) loads.push_back(normal_->load(r));
  const auto d = router_.route(request.prompt_hashes, request.prompt_tokens, loads);
  const RequestId id = request.id;
  if (!d) {
    finish(id, "no healthy DP rank to serve it");
    return;
  }
  // The router counted the longest hit anywhere; what this rank gets is its own hit plus a fetch, if
  // one pays. A prompt still long after that goes to the prefill worker after all.
  PrefillPath path = d->path;
  std::vector<RankMatch> matches;
  FetchDecision fetch;
  if (path == PrefillPath::local) {
    matches = router_.index().match(request.prompt_hashes);
    if (rdma_ != nullptr && cfg_.fetch_remote_prefix) {
      fetch = plan_fetch(matches, d->rank, router_.config().block_tokens, kv_bytes_per_token_, cfg_.fetch);
    }
    const std::int64_t reachable_blocks = matches[static_cast<std::size_t>(d->rank)].grace_blocks +
                                          (fetch.source != PrefixSource::none ? fetch.blocks : 0);
    const std::int64_t uncached = request.prompt_tokens - reachable_blocks * router_.config().block_tokens;
    if (prefill_ && uncached >= router_.config().prefill_threshold_tokens) path = PrefillPath::prefill_worker;
  }
  RequestTiming& t = timings_.at(id);
  t.path = path;
  t.rank = d->rank;
  t.cached_tokens = d->cached_tokens;
  t.routed = rt_.now();
  rt_.record("router", "routed",
             {{"request", id},
              {"path", path == PrefillPath::local ? "local" : "prefill_worker"},
              {"rank", d->rank},
              {"cached_tokens", d->cached_tokens}});
  if (path == PrefillPath::local) {
    submit_local(d->rank, std::move(request), matches, fetch);
    return;
  }
  if (!normal_->fits(d->rank, request)) {
    finish(id, "prompt and output need more KV blocks than DP rank " + std::to_string(d->rank) + " holds");
    return;
  }
  const auto room = normal_->receive(d->rank, request);
  if (!room) {
    pending_.push_back(std::move(request));  // routed again when a request finishes and frees KV
    return;
  }
  Moving m;
  m.rank = d->rank;
  // Only the part of the prompt the decode rank does not already hold has to move.
  const std::int64_t held = room->gpu_hit_tokens + room->grace_hit_tokens;
  m.share = static_cast<double>(request.prompt_tokens - held) / static_cast<double>(request.prompt_tokens);
  moving_[id] = m;
  const std::int64_t held_blocks = held / router_.config().block_tokens;
  if (held_blocks == 0 || rdma_ == nullptr) {
    prefill_->submit(std::move(request));
    return;
  }
  // The prefill worker attends over that prefix too: it reads it from the decode rank (one-sided RDMA)
  // instead of recomputing it, then prefills the rest.
  hal::RdmaOp op;
  op.local = region_of(normal_->device_of(d->rank), false);
  op.remote = prefill_region();
  op.bytes = static_cast<std::uint64_t>(held) * kv_bytes_per_token_;
  op.path = hal::RdmaPath::scale_out;
  op.name = "kv.prefix_to_prefill.req" + std::to_string(id);
  rdma_->write(op, [this, held_blocks, request = std::move(request)](const hal::HalError* error) mutable {
    if (error == nullptr) {
      prefill_->kv().import(std::span(request.prompt_hashes).first(static_cast<std::size_t>(held_blocks)));
    } else {
      rt_.record("pd", "prefix_to_prefill_failed", {{"request", request.id}, {"error", error->what()}},
                 rt::Severity::warning);  // the prefill worker recomputes it
    }
    prefill_->submit(std::move(request));
  });
}

hal::MemoryRegion PdSystem::prefill_region() {
  if (prefill_region_.id == 0) {
    prefill_region_ = rdma_->register_device_memory(prefill_gpu_, cfg_.transfer.region_bytes);
  }
  return prefill_region_;
}

hal::MemoryRegion PdSystem::region_of(hal::DeviceId device, bool grace) {
  const auto key = std::pair(device, grace);
  const auto it = regions_.find(key);
  if (it != regions_.end()) return it->second;
  const auto gpu = std::find_if(normal_gpus_.begin(), normal_gpus_.end(),
                                [device](const hal::Device* g) { return g->id() == device; });
  const hal::MemoryRegion r = grace ? rdma_->register_host_memory((*gpu)->info().host, cfg_.transfer.region_bytes)
                                    : rdma_->register_device_memory(device, cfg_.transfer.region_bytes);
  return regions_.emplace(key, r).first->second;
}

void PdSystem::submit_local(std::int32_t rank, RequestState request, const std::vector<RankMatch>& matches,
                            const FetchDecision& f) {
  if (f.blocks > 0) {
    rt_.record("router", "prefix_fetch_decision",
               {{"request", request.id},
                {"fetch", f.source != PrefixSource::none},
                {"from_rank", f.from_rank},
                {"blocks", f.blocks},
                {"fetch_us", f.fetch_time.microseconds()},
                {"recompute_us", f.recompute_time.microseconds()}});
  }
  if (f.source == PrefixSource::none) {
    normal_->submit(rank, std::move(request));
    return;
  }
  const bool from_grace = f.source == PrefixSource::peer_grace;
  hal::RdmaOp op;
  op.local = region_of(normal_->device_of(f.from_rank), from_grace);
  op.remote = region_of(normal_->device_of(rank), false);
  op.bytes = static_cast<std::uint64_t>(f.blocks * router_.config().block_tokens) * kv_bytes_per_token_;
  op.path = from_grace ? hal::RdmaPath::scale_out : hal::RdmaPath::nvlink;
  op.name = "kv.fetch.req" + std::to_string(request.id);
  const std::int64_t prefix_blocks = matches[static_cast<std::size_t>(rank)].grace_blocks + f.blocks;
  rdma_->write(op, [this, rank, prefix_blocks, request = std::move(request)](const hal::HalError* error) mutable {
    if (error == nullptr) {
      normal_->kv(rank).import(std::span(request.prompt_hashes).first(static_cast<std::size_t>(prefix_blocks)));
    } else {
      rt_.record("pd", "prefix_fetch_failed", {{"request", request.id}, {"error", error->what()}},
                 rt::Severity::warning);  // recomputed instead
    }
    normal_->submit(rank, std::move(request));
  });
}

void PdSystem::on_kv_ready(RequestId id, std::int64_t layers_done, std::int64_t total, std::uint64_t bytes_so_far) {
  const auto it = moving_.find(id);
  if (it == moving_.end()) return;
  Moving& m = it->second;
  const std::uint64_t ready = bytes_so_far - m.sent;
  m.sent = bytes_so_far;
  m.all_layers = layers_done >= total;
  const auto bytes = static_cast<std::uint64_t>(std::llround(static_cast<double>(ready) * m.share));
  if (bytes == 0) {
    maybe_received(id);
    return;
  }
  ++m.pushes;
  timings_.at(id).transfer_bytes += bytes;
  transfer_->push(id, normal_->device_of(m.rank), bytes, [this, id](const hal::HalError* error) {
    const auto mit = moving_.find(id);
    if (mit == moving_.end()) return;
    --mit->second.pushes;
    if (error != nullptr && !mit->second.failed) {
      mit->second.failed = true;
      rt_.record("pd", "kv_transfer_failed", {{"request", id}, {"error", error->what()}}, rt::Severity::warning);
    }
    maybe_received(id);
  });
}

void PdSystem::maybe_received(RequestId id) {
  const auto it = moving_.find(id);
  if (it == moving_.end() || !it->second.all_layers || it->second.pushes > 0) return;
  const Moving m = it->second;
  moving_.erase(it);
  prefill_->release_kv(id);  // every push has landed (or failed): the prefill worker's blocks are free
  if (m.failed) {
    normal_->receive_failed(m.rank, id);  // prefilled on the DP rank instead: the request goes on
    return;
  }
  timings_.at(id).kv_arrived = rt_.now();
  normal_->received(m.rank, id);
}

void PdSystem::on_prefill_done(const StepOutcome& o) {
  const auto it = timings_.find(o.id);
  if (it != timings_.end()) it->second.prefill_done = rt_.now();
}

void PdSystem::on_normal_tokens(std::int32_t, const StepOutcome& o) {
  const auto it = timings_.find(o.id);
  if (it == timings_.end()) return;
  RequestTiming& t = it->second;
  t.output_tokens += o.new_output_tokens;
  if (o.first_token) t.first_token = rt_.now();
  on_tokens_(o.id, o.new_output_tokens, o.first_token, o.finished);
  if (o.finished) finish(o.id, "");
}

void PdSystem::on_reject(RequestId id, const std::string& reason) {
  const auto it = moving_.find(id);
  if (it != moving_.end()) {
    // The prefill worker cannot hold it: try the DP rank, whose KV room is already taken.
    const std::int32_t rank = it->second.rank;
    moving_.erase(it);
    normal_->receive_failed(rank, id);
    return;
  }
  finish(id, reason);
}

void PdSystem::finish(RequestId id, const std::string& failure) {
  const auto it = timings_.find(id);
  if (it == timings_.end()) return;
  it->second.finished = rt_.now();
  it->second.failure = failure;
  const RequestTiming t = it->second;
  timings_.erase(it);
  on_done_(t);
  retry_pending();
}

void PdSystem::retry_pending() {
  if (retrying_) return;  // a retry that finishes a request would otherwise re-enter
  retrying_ = true;
  std::deque<RequestState> again;
  again.swap(pending_);
  for (auto& r : again) route(std::move(r));
  retrying_ = false;
}

}  // namespace nvl::engine
