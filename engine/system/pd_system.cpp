#include "engine/system/pd_system.h"

#include <algorithm>
#include <stdexcept>

#include "engine/model/kv_footprint.h"
#include "engine/system/control_codec.h"

namespace nvl::engine {

namespace {
constexpr std::uint32_t kRouterPort = 7000;
constexpr std::uint32_t kFrontendPort = 7002;

RouterConfig router_config(RouterConfig cfg, const PdDeployment& d) {
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

// The options as the processes use them: the recompute side of the prefix fetch choice priced on the
// first decoding GPU.
PdSystemConfig system_config(const PdDeployment& d, const ModelProfile& model) {
  if (d.decode.empty()) throw std::invalid_argument("P/D system: needs at least one decoding instance");
  PdSystemConfig cfg = d.system;
  cfg.fetch.gpu_pool = cfg.kv_pool;
  if (!d.decode.front().gpus.empty()) {
    const hal::Device& first = *d.decode.front().gpus.front();
    cfg.fetch.recompute_tokens_per_s = first.info().peak(hal::DType::fp8) * cfg.prefill_efficiency /
                                       (2.0 * static_cast<double>(model.active_params()));
  }
  return cfg;
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
      cfg_(system_config(d, model)),
      control_(rt, network, [this](const proto::ControlMessage& m, const std::string& why) { on_lost(m, why); }),
      frontend_(
          rt, control_, dir_, std::move(on_tokens), std::move(on_done),
          [this] {
            loads_.arm();
            router_.health().watch();  // the periodic check stops while idle; work brings it back
          },
          [this](RequestId id) {
            dir_.streamed.erase(id);
            router_.ended(id);
            if (frontend_.in_flight() == 0) router_.health().pause();  // idle: no check keeps the run (or a test) going
          }),
      router_(rt, cfg_, control_, dir_, ranks_of(d), router_config(d.system.router, d), rdma != nullptr, d.decode.size(),
              d.prefill.size()),
      loads_(rt, cfg_.load_report_interval, control_, dir_),
      regions_(rdma, cfg_.transfer.region_bytes) {
  // The router and the frontend sit on the first decoding GPU's host; each rank speaks from its GPU's host.
  const hal::HostId router_host = d.decode.front().gpus.front()->info().host;
  dir_.router = hal::Address{router_host, kRouterPort};
  dir_.frontend = hal::Address{router_host, kFrontendPort};
  dir_.block_tokens = router_.router().config().block_tokens;
  dir_.kv_bytes_per_token = kv_bytes_per_token(model, d.decode.front().group.kv_dtype).total();
  dir_.frontend_process = &frontend_;
  dir_.router_process = &router_;
  dir_.loads = &loads_;
  control_.listen(dir_.router, [this](const proto::ControlMessage& m) { router_.on_message(m); });
  control_.listen(dir_.frontend, [this](const proto::ControlMessage& m) { frontend_.on_message(m); });
  for (DecodeInstance& i : d.decode) {
    decode_.push_back(std::make_unique<DecodeInstanceProcess>(rt, model, collectives, rdma, cfg_, control_, dir_, regions_,
                                                              std::move(i), decode_.size()));
    dir_.decode.push_back(decode_.back().get());
  }
  if (!d.prefill.empty() && rdma == nullptr) {
    throw std::invalid_argument("a prefill instance needs RDMA to move its KV to the DP ranks");
  }
  for (PrefillInstance& p : d.prefill) {
    prefill_.push_back(std::make_unique<PrefillInstanceProcess>(rt, model, collectives, *rdma, cfg_, control_, dir_,
                                                                std::move(p), prefill_.size()));
    dir_.prefill.push_back(prefill_.back().get());
  }
  router_.start_health();
  for (auto& i : decode_) i->start();
  for (auto& p : prefill_) p->start();
  loads_.start();  // the router's first view
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
  for (std::size_t i = 0; i < prefill_.size(); ++i) {
    for (const hal::Device* d : prefill_[i]->gpus()) {
      if (d->id() == gpu) return i;
    }
  }
  return std::nullopt;
}

std::uint64_t PdSystem::transfer_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& p : prefill_) bytes += p->transfer_bytes();
  return bytes;
}

// Each process would notice a message of its own that never arrived by its own timeout; here the
// transport's report reaches this root, which acts for the sender at once, as before the split.
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
      router_.answer_health(rank, false, "health check lost: " + why);
      return;
    }
    case proto::ControlMessage::kCancel:
      abandon(m.cancel().request_id(), "cancelled");
      return;
    case proto::ControlMessage::kSchedule:
      if (m.schedule().path() == proto::PREFILL_PATH_PREFILL && m.schedule().rank() < 0) {
        // The prefill instance is out of reach: the decode rank, whose KV room is taken, prefills it.
        const RequestId id = m.schedule().spec().request_id();
        if (PrefillInstanceProcess* p = dir_.moving(id)) p->forget(id);
        const std::int32_t rank = m.schedule().decode_rank();
        dir_.decode_of(rank).reprefill(rank, id, "prefill_worker_unreachable", why);
        return;
      }
      abandon(request_of(m), "control message lost: " + why);
      return;
    case proto::ControlMessage::kTransferDone: {
      // The decode rank cannot know whether its KV arrived: it prefills the prompt itself.
      const std::int32_t rank = m.transfer_done().to_rank();
      dir_.decode_of(rank).reprefill(rank, m.transfer_done().request_id(), "kv_transfer_unconfirmed", why);
      return;
    }
    default:
      abandon(request_of(m), "control message lost: " + why);
  }
}

void PdSystem::abandon(RequestId id, const std::string& why) {
  if (!frontend_.in_flight(id)) return;
  const std::int32_t rank = frontend_.timing(id)->rank;
  if (rank >= 0) group_of(rank).cancel(local_rank(rank), id);
  if (PrefillInstanceProcess* p = dir_.moving(id)) p->stop(id);
  router_.forget_prefill(id);
  router_.drop_pending(id);
  rt_.record("control", "request_abandoned", {{"request", id}, {"reason", why}}, rt::Severity::warning);
  frontend_.finish(id, why);
}

void PdSystem::crash_worker(std::int32_t rank) {
  if (rank < 0 || rank >= ranks()) throw std::out_of_range("no DP rank " + std::to_string(rank));
  group_of(rank).crash(local_rank(rank));
  router_.health().watch();
}

void PdSystem::crash_prefill_worker(std::size_t instance) {
  if (instance >= prefill_.size()) throw std::logic_error("crash_prefill_worker: no prefill instance " + std::to_string(instance));
  prefill_[instance]->worker().crash();
  router_.health().watch();
}

std::int64_t PdSystem::grace_memory_error(std::int32_t rank) {
  if (rank < 0 || rank >= ranks()) throw std::out_of_range("no DP rank " + std::to_string(rank));
  const std::int64_t lost = kv(rank).drop_grace_cached();
  rt_.record("kv", "grace_blocks_lost", {{"rank", rank}, {"blocks", lost}}, rt::Severity::warning);
  return lost;
}

}  // namespace nvl::engine
