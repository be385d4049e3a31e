#include "engine/system/prefill_instance_process.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>

#include "engine/system/control_codec.h"
#include "engine/system/frontend.h"
#include "engine/system/router_process.h"

namespace nvl::engine {

namespace {
constexpr std::uint32_t kPrefillPort = 7001;  // + 100 per instance: instances sharing a host get their own
}  // namespace

PrefillInstanceProcess::PrefillInstanceProcess(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives,
                                               hal::Rdma& rdma, const PdSystemConfig& cfg, ControlPlane& control,
                                               PdDirectory& dir, PrefillInstance p, std::size_t index)
    : rt_(rt), cfg_(cfg), control_(control), dir_(dir), rdma_(rdma), index_(index), gpus_(p.gpus) {
  p.worker.hold_kv_for_transfer = true;  // its KV is read by the transfer after the first token
  worker_ = std::make_unique<PrefillWorker>(
      rt, model, p.gpus, collectives, p.worker,
      [this](const StepOutcome& o) {
        ++prefilled_;
        // The router's count of what this instance still has to prefill drops (in-process: the
        // instance's load report would be a message, and change the results).
        dir_.router_process->forget_prefill(o.id);
        if (RequestTiming* t = dir_.frontend_process->timing(o.id)) t->prefill_done = rt_.now();
      },
      [this](RequestId id, std::int64_t done, std::int64_t total, std::uint64_t bytes) {
        on_kv_ready(id, done, total, bytes);
      },
      [this](RequestId id, const std::string& why) {
        // The prefill instance cannot hold it: the decode rank, whose KV room is taken, prefills it.
        const auto it = moving_.find(id);
        if (it == moving_.end()) return;
        const std::int32_t rank = it->second.to.rank;
        moving_.erase(it);
        dir_.router_process->forget_prefill(id);
        proto::ControlMessage m;
        proto::KvTransferDone& done = *m.mutable_transfer_done();
        done.set_request_id(id);
        done.set_to_rank(rank);
        done.set_ok(false);
        done.set_error(why);
        control_.send(address_, dir_.rank(rank).address, std::move(m));
      });
  // Every instance listens on its own first GPU's host.
  address_ = hal::Address{p.gpus.front()->info().host, kPrefillPort + static_cast<std::uint32_t>(100 * index)};
  dir_.prefills.push_back(address_);
  control_.listen(address_, [this](const proto::ControlMessage& m) { on_message(m); });
  // A DP rank's KV of stage s's layers lives on its tp GPUs there, which push it.
  for (std::int64_t stage = 0; stage < worker_->pp(); ++stage) {
    for (std::int32_t rank = 0; rank < worker_->ranks(); ++rank) {
      std::vector<hal::DeviceId> sources;
      for (const hal::Device* gpu : worker_->devices_of(stage, rank)) sources.push_back(gpu->id());
      transfers_.emplace_back(rdma_, std::move(sources), cfg_.transfer);
    }
  }
  regions_.resize(static_cast<std::size_t>(worker_->ranks()));
  // A failed step is reported to the router's health monitor (in-process, as for the ranks).
  worker_->on_step_failure([this](const hal::HalError&) {
    dir_.router_process->operation_error(HealthMonitor::prefill_member(static_cast<std::int32_t>(index_)));
  });
}

std::uint64_t PrefillInstanceProcess::transfer_bytes() const {
  std::uint64_t bytes = 0;
  for (const KvTransfer& t : transfers_) bytes += t.bytes_moved();
  return bytes;
}

void PrefillInstanceProcess::on_message(const proto::ControlMessage& m) {
  switch (m.body_case()) {
    case proto::ControlMessage::kSchedule:
      schedule(m.schedule());
      return;
    case proto::ControlMessage::kCancel: {
      const RequestId id = m.cancel().request_id();
      moving_.erase(id);  // pushes still in flight land unheeded
      dir_.router_process->forget_prefill(id);
      worker_->release_kv(id);
      worker_->cancel(id);
      return;
    }
    default:
      throw std::logic_error("prefill worker: unexpected control message " + kind_of(m));
  }
}

void PrefillInstanceProcess::expect(RequestId id, Destination to) {
  Moving m;
  m.to = std::move(to);
  m.source_rank = next_rank_;
  next_rank_ = (next_rank_ + 1) % worker_->ranks();
  moving_[id] = std::move(m);
}

hal::MemoryRegion PrefillInstanceProcess::region(RequestId id) {
  const std::int32_t rank = moving_.at(id).source_rank;
  hal::MemoryRegion& region = regions_[static_cast<std::size_t>(rank)];
  if (region.id == 0) {
    region = rdma_.register_device_memory(worker_->devices_of(0, rank).front()->id(), cfg_.transfer.region_bytes);
  }
  return region;
}

void PrefillInstanceProcess::stop(RequestId id) {
  worker_->release_kv(id);
  worker_->cancel(id);
  moving_.erase(id);
}

void PrefillInstanceProcess::schedule(const proto::ScheduleOnRank& s) {
  RequestState request = from_spec(s.spec());
  const auto it = moving_.find(request.id);
  if (it == moving_.end()) return;  // cancelled on the way
  const std::int32_t rank = it->second.source_rank;
  const std::int64_t held_blocks = s.cached_prefix_tokens() / dir_.block_tokens;
  if (held_blocks > 0) {
    worker_->kv(rank).import(std::span(request.prompt_hashes).first(static_cast<std::size_t>(held_blocks)));
  }
  worker_->submit(rank, std::move(request));
}

void PrefillInstanceProcess::on_kv_ready(RequestId id, std::int64_t layers_done, std::int64_t total,
                                         std::uint64_t bytes_so_far) {
  const auto it = moving_.find(id);
  if (it == moving_.end()) return;
  Moving& m = it->second;
  if (layers_done <= m.layers_sent) return;  // a step retried after a failure: these layers were sent
  const std::uint64_t ready = bytes_so_far - m.sent;
  m.sent = bytes_so_far;
  m.all_layers = layers_done >= total;
  const std::int64_t first_layer = m.layers_sent;
  m.layers_sent = layers_done;
  const auto bytes = static_cast<std::uint64_t>(std::llround(static_cast<double>(ready) * m.to.share));
  if (bytes == 0) {
    maybe_received(id);
    return;
  }
  const std::int32_t rank = m.to.rank;
  // The layer group lies in one pipeline stage: the one holding its first layer.
  std::int64_t stage = 0;
  while (stage + 1 < worker_->pp() && worker_->layers(stage).end_layer <= first_layer) ++stage;
  // Every GPU of an attention-TP rank gets its share of each block: all of it under MLA, which each
  // TP rank reads whole, 1/tp of it for split GQA heads.
  const std::uint64_t gpu_bytes = bytes * m.to.gpu_block_bytes / m.to.block_bytes;
  const std::vector<hal::DeviceId> dests = m.to.gpus;
  m.pushes += dests.size();  // all counted first: a push that settles at once must not see the count at zero
  KvTransfer& transfer = transfers_[static_cast<std::size_t>(stage * worker_->ranks() + m.source_rank)];
  for (const hal::DeviceId dest : dests) {
    transfer.push(
        id, dest, gpu_bytes,
        [this, id, rank, first_layer, layers_done, gpu_bytes](const hal::HalError* error, std::int64_t retries) {
          const auto mit = moving_.find(id);
          if (mit == moving_.end()) return;
          --mit->second.pushes;
          if (RequestTiming* t = dir_.frontend_process->timing(id)) t->transfer_retries += retries;
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
            control_.send(address_, dir_.rank(rank).address, std::move(msg));
          }
          maybe_received(id);
        });
  }
}

void PrefillInstanceProcess::maybe_received(RequestId id) {
  const auto it = moving_.find(id);
  if (it == moving_.end() || !it->second.all_layers || it->second.pushes > 0) return;
  const Moving m = it->second;
  moving_.erase(it);
  worker_->release_kv(id);  // every push has landed (or failed): the worker's blocks are free
  proto::ControlMessage msg;
  proto::KvTransferDone& d = *msg.mutable_transfer_done();
  d.set_request_id(id);
  d.set_to_rank(m.to.rank);
  d.set_ok(m.error.empty());
  d.set_error(m.error);
  d.set_transport(cfg_.transfer.path == hal::RdmaPath::nvlink ? proto::KV_TRANSPORT_NVLINK : proto::KV_TRANSPORT_RDMA);
  control_.send(address_, dir_.rank(m.to.rank).address, std::move(msg));
}

std::vector<std::pair<RequestId, std::int32_t>> PrefillInstanceProcess::take_down(const std::string& why) {
  std::vector<std::pair<RequestId, std::int32_t>> held;
  for (const auto& [id, m] : moving_) held.emplace_back(id, m.to.rank);
  moving_.clear();
  worker_->take_down(why);
  return held;
}

void PrefillInstanceProcess::recover(const std::string& why) {
  // It comes back after a reset of the GPUs that need one, or a restart of its process. Its TP group
  // cannot run without a lost GPU: then it stays out.
  const bool crashed = worker_->crashed();
  const bool lost = std::any_of(gpus_.begin(), gpus_.end(),
                                [](const hal::Device* g) { return g->health() == hal::DeviceHealth::lost; });
  if (lost) {
    rt_.record("health", "prefill_worker_out", prefill_record({{"why", why}, {"until", "the end of the run"}}, index_),
               rt::Severity::warning);
    return;
  }
  rt_.call_after(crashed ? cfg_.health.worker_restart_time : cfg_.health.gpu_reset_time, [this, crashed, why] {
    for (hal::Device* gpu : gpus_) {
      if (gpu->health() == hal::DeviceHealth::needs_reset) gpu->reset();
    }
    if (std::any_of(gpus_.begin(), gpus_.end(),
                    [](const hal::Device* g) { return g->health() != hal::DeviceHealth::healthy; })) {
      rt_.record("health", "prefill_worker_out",
                 prefill_record({{"why", "a GPU was lost while it was out"}, {"until", "the end of the run"}}, index_),
                 rt::Severity::warning);
      return;
    }
    worker_->restore();
    dir_.router_process->prefill_back(index_, crashed, why);
  });
}

std::optional<std::string> PrefillInstanceProcess::probe() const {
  const std::string which = dir_.prefills.size() > 1 ? "prefill instance " + std::to_string(index_) : "the prefill worker";
  if (!worker_->live()) return std::nullopt;  // out: not watched
  if (worker_->crashed()) return "the worker process of " + which + " exited";
  for (const hal::Device* gpu : gpus_) {
    if (gpu->health() != hal::DeviceHealth::healthy) return xid_text(gpu->health(), gpu->id()) + " under " + which;
  }
  return std::nullopt;
}

}  // namespace nvl::engine
