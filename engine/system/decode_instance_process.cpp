#include "engine/system/decode_instance_process.h"

#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>

#include "engine/system/control_codec.h"
#include "engine/system/frontend.h"
#include "engine/system/load_reporter.h"
#include "engine/system/prefill_instance_process.h"
#include "engine/system/router_process.h"

namespace nvl::engine {

namespace {
constexpr std::uint32_t kRankPortBase = 10000;  // + the rank's GPU id
}  // namespace

DecodeInstanceProcess::DecodeInstanceProcess(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives,
                                             hal::Rdma* rdma, const PdSystemConfig& cfg, ControlPlane& control,
                                             PdDirectory& dir, RdmaRegions& regions, DecodeInstance d, std::size_t index)
    : rt_(rt),
      cfg_(cfg),
      control_(control),
      dir_(dir),
      regions_(regions),
      rdma_(rdma),
      first_rank_(static_cast<std::int32_t>(dir.ranks.size())) {
  for (hal::Device* gpu : d.gpus) {
    gpus_[gpu->id()] = gpu;
    regions_.add(gpu);
  }
  d.group.first_rank = first_rank_;
  // Every DP rank's requests, tokens and failures reach the system under its global rank.
  group_ = std::make_unique<NormalWorkerGroup>(
      rt, model, d.gpus, collectives, d.group,
      [this](std::int32_t local, const StepOutcome& o) { on_tokens(first_rank_ + local, o); },
      [this](std::int32_t local, RequestId id, const std::string& why) {
        end_request(control_, dir_, address(first_rank_ + local), id, why);
      });
  for (std::int32_t l = 0; l < group_->ranks(); ++l) {
    const std::int32_t r = first_rank_ + l;
    const hal::Device& gpu = *gpus_.at(group_->device_of(l));
    dir_.ranks.push_back(RankSlot{.instance = index,
                                  .local = l,
                                  .local_prefill = d.local_prefill,
                                  .gpus = group_->devices_of(l),
                                  .address = hal::Address{gpu.info().host, kRankPortBase + static_cast<std::uint32_t>(gpu.id())}});
    control_.listen(address(r), [this, r](const proto::ControlMessage& m) { on_message(r, m); });
    group_->kv(l).subscribe([this, r](const KvEvent& e) {
      proto::ControlMessage m;
      *m.mutable_kv_event() = to_message(e);
      control_.send(address(r), dir_.router, std::move(m));
    });
  }
  // A failed step is reported to the router's health monitor (its log, which the router's watch reads
  // in-process: a message would change the results).
  group_->on_step_failure([this](std::int32_t l, const hal::HalError&) {
    dir_.router_process->operation_error(first_rank_ + l);
  });
}

void DecodeInstanceProcess::on_message(std::int32_t rank, const proto::ControlMessage& m) {
  dir_.loads->arm();
  switch (m.body_case()) {
    case proto::ControlMessage::kSchedule:
      schedule(rank, m.schedule());
      return;
    case proto::ControlMessage::kCancel:
      cancel(rank, m.cancel());
      return;
    case proto::ControlMessage::kTransferReady: {
      if (RequestTiming* t = dir_.frontend_process->timing(m.transfer_ready().request_id())) {
        t->transfer_bytes += m.transfer_ready().bytes();
      }
      return;
    }
    case proto::ControlMessage::kTransferDone:
      transfer_done(rank, m.transfer_done());
      return;
    case proto::ControlMessage::kHealthCheck: {
      proto::ControlMessage reply;
      proto::HealthStatus& s = *reply.mutable_health_status();
      s.set_rank(rank);
      s.set_healthy(group_->load(local(rank)).healthy);
      control_.send(address(rank), dir_.router, std::move(reply));
      return;
    }
    default:
      throw std::logic_error("DP rank: unexpected control message " + kind_of(m));
  }
}

void DecodeInstanceProcess::schedule(std::int32_t rank, const proto::ScheduleOnRank& s) {
  RequestState request = from_spec(s.spec());
  if (!dir_.frontend_process->live(request.id)) return;
  if (redirect(rank, request, s.path() == proto::PREFILL_PATH_PREFILL)) return;
  if (s.path() == proto::PREFILL_PATH_PREFILL) {
    const auto instance = static_cast<std::size_t>(s.prefill_instance());
    // The rank finds the instance declared dead by the router (read in-process: it stands for the
    // instance's dropped connection).
    if (const auto& down = dir_.router_process->prefill_down(instance)) {
      // Routed to a prefill instance before it was declared dead: the rank prefills it itself.
      dir_.router_process->forget_prefill(request.id);
      rt_.record("pd", "local_prefill_instead", prefill_record({{"request", request.id}, {"rank", rank}, {"why", *down}}, instance),
                 rt::Severity::warning);
      if (RequestTiming* t = dir_.frontend_process->timing(request.id)) {
        t->path = PrefillPath::local;
        t->reprefilled = true;
      }
      group_->submit(local(rank), std::move(request));
      return;
    }
    receive(rank, instance, std::move(request));
    return;
  }
  if (s.fetch_from_rank() < 0) {
    group_->submit(local(rank), std::move(request));
    return;
  }
  // Fetch the prefix a peer holds first (GPU peer-to-peer over NVLink, or a one-sided RDMA read of
  // the peer's Grace memory), then prefill the rest. Every GPU of an attention-TP rank gets its share
  // (all of it under MLA), from the peer's GPU of the same TP rank.
  const bool from_grace = s.fetch_from_grace();
  const RankSlot& from = dir_.rank(s.fetch_from_rank());
  const std::vector<hal::DeviceId>& to = dir_.rank(rank).gpus;
  const std::uint64_t bytes = static_cast<std::uint64_t>(s.fetch_blocks()) * static_cast<std::uint64_t>(dir_.block_tokens) *
                              dir_.kv_bytes_per_token * group_->gpu_block_bytes() / group_->block_bytes();
  const std::int64_t prefix_blocks = s.cached_prefix_tokens() / dir_.block_tokens + s.fetch_blocks();
  struct Fetch {
    RequestState request;
    std::size_t pending = 0;
    std::string error;  // the first write that failed: why
  };
  auto fetch = std::make_shared<Fetch>(Fetch{.request = std::move(request), .pending = to.size(), .error = {}});
  for (std::size_t t = 0; t < to.size(); ++t) {
    hal::RdmaOp op;
    op.local = regions_.of(from.gpus[t % from.gpus.size()], from_grace);
    op.remote = regions_.of(to[t], false);
    op.bytes = bytes;
    op.path = from_grace ? hal::RdmaPath::scale_out : hal::RdmaPath::nvlink;
    op.name = "kv.fetch.req" + std::to_string(fetch->request.id) + (to.size() > 1 ? ".tp" + std::to_string(t) : "");
    rdma_->write(op, [this, rank, prefix_blocks, fetch](const hal::HalError* error) {
      if (error != nullptr && fetch->error.empty()) fetch->error = error->what();
      if (--fetch->pending > 0) return;
      RequestState& fetched = fetch->request;
      if (!dir_.frontend_process->live(fetched.id)) return;  // cancelled while the prefix moved
      if (fetch->error.empty()) {
        group_->kv(local(rank)).import(std::span(fetched.prompt_hashes).first(static_cast<std::size_t>(prefix_blocks)));
      } else {
        rt_.record("pd", "prefix_fetch_failed", {{"request", fetched.id}, {"error", fetch->error}},
                   rt::Severity::warning);  // recomputed instead
      }
      if (redirect(rank, fetched, false)) return;  // the rank was declared dead meanwhile
      group_->submit(local(rank), std::move(fetched));
    });
  }
}

void DecodeInstanceProcess::receive(std::int32_t rank, std::size_t instance, RequestState request) {
  const RequestId id = request.id;
  if (!group_->fits(local(rank), request)) {
    end_request(control_, dir_, address(rank), id,
                "prompt and output need more KV blocks than DP rank " + std::to_string(rank) + " holds");
    return;
  }
  const auto room = group_->receive(local(rank), request);
  if (!room) {
    // Back to the router's queue, routed again (a prefill instance chosen again) when KV frees up.
    dir_.router_process->requeue(std::move(request));
    return;
  }
  // Only the part of the prompt the decode rank does not already hold has to move.
  const std::int64_t held = room->gpu_hit_tokens + room->grace_hit_tokens;
  PrefillInstanceProcess& prefill = *dir_.prefill.at(instance);
  prefill.expect(id, {.rank = rank,
                      .share = static_cast<double>(request.prompt_tokens - held) / static_cast<double>(request.prompt_tokens),
                      .gpus = group_->devices_of(local(rank)),
                      .gpu_block_bytes = group_->gpu_block_bytes(),
                      .block_bytes = group_->block_bytes()});
  proto::ControlMessage msg;
  proto::ScheduleOnRank& s = *msg.mutable_schedule();
  s.set_rank(-1);
  s.set_decode_rank(rank);
  s.set_path(proto::PREFILL_PATH_PREFILL);
  s.set_fetch_from_rank(-1);
  *s.mutable_spec() = to_spec(request);
  const std::int64_t held_blocks = held / dir_.block_tokens;
  if (held_blocks == 0 || rdma_ == nullptr) {
    control_.send(address(rank), prefill.address(), std::move(msg));
    return;
  }
  // The prefill instance attends over that prefix too: the rank writes it to the instance (one-sided
  // RDMA) instead of the instance recomputing it.
  hal::RdmaOp op;
  op.local = regions_.of(dir_.rank(rank).gpus.front(), false);
  op.remote = prefill.region(id);
  op.bytes = static_cast<std::uint64_t>(held) * dir_.kv_bytes_per_token;
  op.path = hal::RdmaPath::scale_out;
  op.name = "kv.prefix_to_prefill.req" + std::to_string(id);
  rdma_->write(op, [this, rank, id, &prefill, held_blocks, msg = std::move(msg)](const hal::HalError* error) mutable {
    // Cancelled meanwhile, or its prefill instance dropped it (read off the instance in-process; a
    // real rank would learn either from a message).
    if (dir_.moving(id) == nullptr) return;
    if (error == nullptr) {
      msg.mutable_schedule()->set_cached_prefix_tokens(static_cast<std::uint32_t>(held_blocks * dir_.block_tokens));
    } else {
      rt_.record("pd", "prefix_to_prefill_failed", {{"request", id}, {"error", error->what()}},
                 rt::Severity::warning);  // the prefill instance recomputes it
    }
    control_.send(address(rank), prefill.address(), std::move(msg));
  });
}

void DecodeInstanceProcess::cancel(std::int32_t rank, const proto::Cancel& c) {
  const RequestId id = c.request_id();
  group_->cancel(local(rank), id);  // wherever it is on the rank: queued, prefilling, receiving, decoding
  // Its KV still moving in: the prefill instance stops too. (Whether it is, is read off the instance
  // in-process: a Cancel sent there on the rank's own guess would be a message more.)
  if (const PrefillInstanceProcess* prefill = dir_.moving(id)) {
    proto::ControlMessage m;
    *m.mutable_cancel() = c;
    control_.send(address(rank), prefill->address(), std::move(m));
  }
  end_request(control_, dir_, address(rank), id, c.reason());
}

void DecodeInstanceProcess::transfer_done(std::int32_t rank, const proto::KvTransferDone& d) {
  const RequestId id = d.request_id();
  const RequestState* r = group_->scheduler(local(rank)).find(id);
  if (r == nullptr || r->phase != RequestState::Phase::receiving) return;  // cancelled meanwhile
  RequestTiming* t = dir_.frontend_process->timing(id);
  if (d.ok()) {
    if (t != nullptr) t->kv_arrived = rt_.now();
    group_->received(local(rank), id);
    return;
  }
  // Failed on both paths: the request goes on, prefilled on its DP rank.
  reprefill(rank, id, "kv_transfer_failed", d.error());
}

void DecodeInstanceProcess::reprefill(std::int32_t rank, RequestId id, std::string_view cause, const std::string& error) {
  const RequestState* r = group_->scheduler(local(rank)).find(id);
  if (r == nullptr || r->phase != RequestState::Phase::receiving) return;  // cancelled meanwhile
  rt_.record("pd", cause, {{"request", id}, {"rank", rank}, {"error", error}, {"next", "reprefill"}},
             rt::Severity::warning);
  if (RequestTiming* t = dir_.frontend_process->timing(id)) {
    t->path = PrefillPath::local;
    t->reprefilled = true;
  }
  group_->receive_failed(local(rank), id);
}

void DecodeInstanceProcess::on_tokens(std::int32_t rank, const StepOutcome& o) {
  dir_.loads->arm();
  if (o.new_output_tokens == 0 && !o.finished) return;
  std::int64_t& produced = dir_.streamed[o.id];
  proto::ControlMessage m;
  proto::TokenChunk& c = *m.mutable_tokens();
  c.set_request_id(o.id);
  c.set_first_index(static_cast<std::uint32_t>(produced));
  c.set_count(static_cast<std::uint32_t>(o.new_output_tokens));
  c.set_finished(o.finished);
  if (o.finished) c.set_finish_reason("length");
  produced += o.new_output_tokens;
  if (o.finished) dir_.streamed.erase(o.id);
  control_.send(address(rank), dir_.frontend, std::move(m));
}

bool DecodeInstanceProcess::redirect(std::int32_t rank, RequestState& request, bool prefill_path) {
  RouterProcess& router = *dir_.router_process;
  if (!group_->live(local(rank))) {
    rt_.record("pd", "request_redirected", {{"request", request.id}, {"dead_rank", rank}});
    if (dir_.live_ranks() == 0) {
      end_request(control_, dir_, address(rank), request.id,
                  "DP rank " + std::to_string(rank) + " failed (" + router.dead_why(rank) + ") and no DP rank is left");
      return true;
    }
    router.route(std::move(request));
    return true;
  }
  const auto from = router.take_resume(request.id);
  if (!from) return false;
  request.output_tokens = *from;
  if (!prefill_path) return false;
  group_->submit(local(rank), std::move(request));
  return true;
}

std::optional<std::string> DecodeInstanceProcess::probe(std::int32_t rank) const {
  const std::int32_t l = local(rank);
  if (!group_->live(l)) return std::nullopt;  // out of the group: not watched
  if (group_->crashed(l)) return "the worker process of DP rank " + std::to_string(rank) + " exited";
  for (const hal::DeviceId id : group_->devices_of(l)) {
    const hal::Device& gpu = *gpus_.at(id);
    if (gpu.health() != hal::DeviceHealth::healthy) {
      return xid_text(gpu.health(), gpu.id()) + " under DP rank " + std::to_string(rank);
    }
  }
  return std::nullopt;
}

void DecodeInstanceProcess::take_out(std::int32_t rank, const std::string& why, RequestsTaken migrate) {
  const std::int32_t l = local(rank);
  const bool crashed = group_->crashed(l);
  group_->remove_rank(l, why, std::move(migrate));
  if (crashed) group_->kv(l).drop_grace_cached();  // the process's pinned memory went with it
  // What comes back: a GPU after its reset (drained first: the group no longer runs on it), a worker
  // after its restart. A lost GPU does not.
  std::vector<hal::Device*> gpus;
  for (const hal::DeviceId id : group_->devices_of(l)) gpus.push_back(gpus_.at(id));
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
    group_->restore_rank(local(rank));
    dir_.router_process->rank_back(rank, group_->load(local(rank)));
  });
}

}  // namespace nvl::engine
