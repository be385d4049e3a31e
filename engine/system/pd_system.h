#pragma once
// The serving system of one deployment: the router, the decoding instances (each a lockstep group of
// DP ranks with EP: decode-only, mixed with short prefills, or aggregated) and the prefill instances
// (each a TP/EP/PP prefill worker) whose KV moves to the chosen DP rank of any decoding instance layer
// group by layer group while the prefill continues. The router numbers the DP ranks of every decoding
// instance in one list, instance after instance, and picks the rank (so the instance) and the prefill
// instance of each request.
//
// Each serving process is an actor of its own, owning its state: the Frontend, the RouterProcess, a
// DecodeInstanceProcess per decoding instance and a PrefillInstanceProcess per prefill instance. They
// talk in control-plane protobufs (ControlPlane): over the host network when there is one, directly
// otherwise; the few things they still do to one another in-process say why. This class builds them
// and answers for the whole. A request never disappears: when its KV cannot be moved (on either path)
// it is prefilled on its DP rank instead; when a control message is lost it fails with the reason.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/network.h"
#include "engine/hal/rdma.h"
#include "engine/system/control_plane.h"
#include "engine/system/decode_instance_process.h"
#include "engine/system/frontend.h"
#include "engine/system/load_reporter.h"
#include "engine/system/pd_config.h"
#include "engine/system/pd_directory.h"
#include "engine/system/prefill_instance_process.h"
#include "engine/system/rdma_regions.h"
#include "engine/system/router_process.h"

namespace nvl::engine {

class PdSystem {
 public:
  // Builds the workers on their GPUs (clear errors when the model does not fit) and starts them.
  // `rdma` carries the KV from the prefill worker (needed when there is one). With `network`, the
  // control messages cross the host network as protobufs, with its latency (and its faults).
  PdSystem(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, hal::Rdma* rdma,
           PdDeployment deployment, TokenStream on_tokens, RequestDone on_done, hal::Network* network = nullptr);

  void submit(RequestState request) { frontend_.submit(request); }
  // Stops a request wherever it is (at the router, queued or running on a rank, prefilling, its KV
  // moving) and frees its KV; it ends with the failure "cancelled". False when it is not in flight.
  bool cancel(RequestId id) { return frontend_.cancel(id); }
  // Asks a rank whether it is healthy; a check lost on the way counts as unhealthy.
  void check_health(std::int32_t rank, HealthDone done) { router_.check_health(rank, std::move(done)); }

  const Router& router() const { return router_.router(); }
  const LoadView& load_view() const { return router_.view(); }
  const ControlPlane& control() const { return control_; }
  // The DP ranks over every decoding instance (the router's ranks), and each one's instance.
  std::int32_t ranks() const { return static_cast<std::int32_t>(dir_.ranks.size()); }
  NormalWorkerGroup& group_of(std::int32_t rank) { return dir_.decode_of(rank).group(); }
  const NormalWorkerGroup& group_of(std::int32_t rank) const { return dir_.decode_of(rank).group(); }
  std::int32_t local_rank(std::int32_t rank) const { return dir_.rank(rank).local; }
  KvCacheManager& kv(std::int32_t rank) { return group_of(rank).kv(local_rank(rank)); }
  const RankScheduler& scheduler(std::int32_t rank) const { return group_of(rank).scheduler(local_rank(rank)); }
  bool rank_live(std::int32_t rank) const { return group_of(rank).live(local_rank(rank)); }
  // The DP rank whose GPUs hold `gpu` (nullopt: not a decoding GPU).
  std::optional<std::int32_t> rank_of_gpu(hal::DeviceId gpu) const;
  std::size_t decode_instances() const { return decode_.size(); }
  NormalWorkerGroup& decode_instance(std::size_t i) { return decode_.at(i)->group(); }
  std::size_t prefill_instances() const { return prefill_.size(); }
  PrefillWorker& prefill(std::size_t instance) { return prefill_.at(instance)->worker(); }
  // The prefill instance whose GPUs hold `gpu` (nullopt: not a prefill GPU).
  std::optional<std::size_t> prefill_of_gpu(hal::DeviceId gpu) const;
  std::uint64_t transfer_bytes() const;
  // Requests routed on each path as the router finally sent them (the Router counts its first guess,
  // before a prefix fetch or a pool's role changes it).
  std::uint64_t routed(PrefillPath path) const { return router_.routed(path); }
  // Requests the router sent to each decoding instance, and prompts each prefill instance prefilled.
  std::uint64_t routed_to_instance(std::size_t instance) const { return router_.routed_to_instance(instance); }
  std::uint64_t prefilled_by(std::size_t instance) const { return prefill_.at(instance)->prefilled(); }
  std::size_t in_flight() const { return frontend_.in_flight(); }
  // A request's timing so far (its rank, when it was routed, its first token), as the frontend keeps
  // it; null once it has ended or when unknown.
  const RequestTiming* timing(RequestId id) const { return frontend_.timing(id); }
  std::size_t pending() const { return router_.pending(); }

  // Faults. A rank declared dead (health check or operation error, after the detection delay) leaves
  // the group; its requests continue on healthy ranks from the tokens already delivered (their KV
  // recomputed, or loaded from Grace where the prefix is cached there). Xid 48 and crashed workers come
  // back after the reset / restart time.
  // The worker process of a DP rank dies: its state is gone, its requests re-run elsewhere.
  void crash_worker(std::int32_t rank);
  // A prefill instance is declared dead the same way (its step fails, or a health check finds one of
  // its GPUs unhealthy or its process gone). While it is out the router sends long prompts to the other
  // prefill instances (to local prefill when none is up), and the requests it held (queued, running,
  // their KV not all moved) are prefilled on their DP rank instead. Back after the GPU reset (Xid 48) or
  // the restart; a lost GPU (Xid 79) keeps it out.
  void crash_prefill_worker(std::size_t instance = 0);
  bool prefill_worker_down(std::size_t instance = 0) const { return router_.prefill_down(instance).has_value(); }
  // The router restarts: its prefix index is gone and is rebuilt from the ranks' republished KV events.
  void restart_router() { router_.restart(); }
  // The rank's Grace memory lost its KV blocks: they leave the index; later hits are recomputed.
  std::int64_t grace_memory_error(std::int32_t rank);
  const HealthMonitor& health() const { return router_.health(); }

 private:
  // A message that will never arrive, as the transport reports it to its sender.
  void on_lost(const proto::ControlMessage& m, const std::string& why);
  // A lost message leaves the request nowhere: stop it everywhere and fail it with the reason.
  void abandon(RequestId id, const std::string& why);

  rt::Runtime& rt_;
  PdSystemConfig cfg_;
  PdDirectory dir_;
  ControlPlane control_;
  Frontend frontend_;
  RouterProcess router_;
  LoadReporter loads_;
  RdmaRegions regions_;
  std::vector<std::unique_ptr<DecodeInstanceProcess>> decode_;
  std::vector<std::unique_ptr<PrefillInstanceProcess>> prefill_;
};

}  // namespace nvl::engine
