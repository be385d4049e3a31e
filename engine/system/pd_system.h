#pragma once
// The serving system of one deployment: the router, the normal worker group (DP attention + EP, short
// prefills and every decode) and, when there is one, the prefill worker whose KV moves to the chosen
// DP rank layer group by layer group while the prefill continues. A request never disappears: when its
// KV cannot be moved it is prefilled on its DP rank instead.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "emu/rt/runtime.h"
#include "engine/hal/network.h"
#include "engine/hal/rdma.h"
#include "engine/kv/kv_transfer.h"
#include "engine/router/fetch_planner.h"
#include "engine/router/router.h"
#include "engine/system/request_timing.h"
#include "engine/worker/normal_worker_group.h"
#include "engine/worker/prefill_worker.h"

namespace nvl::engine {

struct PdSystemConfig {
  RouterConfig router;
  KvTransferConfig transfer;
  // Fetch a prefix another rank holds (GPU peer-to-peer or a peer's Grace memory) when that is cheaper
  // than recomputing it (needs RDMA).
  bool fetch_remote_prefix = true;
  FetchCosts fetch;
  // Share of the GPU's dense FP8 peak a prefill sustains, for the recompute side of that choice
  // (estimate: DeepGEMM reaches 78% on large GEMMs; attention and communication take some of the rest).
  double prefill_efficiency = 0.6;
};

// Tokens as they are delivered: `count` more for request `id` (first: the first token is among them).
using TokenStream = std::function<void(RequestId id, std::int64_t count, bool first, bool finished)>;
// A request is over (finished, or failed with a reason in its timing).
using RequestDone = std::function<void(const RequestTiming& timing)>;

struct PdDeployment {
  std::vector<hal::Device*> normal_gpus;
  NormalGroupConfig normal;
  std::vector<hal::Device*> prefill_gpus;  // empty: no prefill worker, every prompt prefilled on its DP rank
  PrefillWorkerConfig prefill;
  PdSystemConfig system;
};

class PdSystem {
 public:
  // Builds the workers on their GPUs (clear errors when the model does not fit) and starts them.
  // `rdma` carries the KV from the prefill worker (needed when there is one). With `network`, the ranks'
  // KV events reach the router as KvEventMsg protobufs over the host network, with its latency (and
  // its faults); without, directly.
  PdSystem(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, hal::Rdma* rdma,
           PdDeployment deployment, TokenStream on_tokens, RequestDone on_done, hal::Network* network = nullptr);

  void submit(RequestState request);
  const Router& router() const { return router_; }
  NormalWorkerGroup& normal() { return *normal_; }
  PrefillWorker* prefill() { return prefill_.get(); }
  std::uint64_t transfer_bytes() const { return transfer_ ? transfer_->bytes_moved() : 0; }
  std::size_t in_flight() const { return timings_.size(); }
  std::size_t pending() const { return pending_.size(); }

 private:
  struct Moving {
    std::int32_t rank = 0;
    double share = 1.0;          // of the prompt's KV that the decode rank does not already hold
    std::uint64_t sent = 0;      // bytes of the prompt's KV reported ready so far (one copy, all layers done)
    std::size_t pushes = 0;      // pushes in flight
    bool all_layers = false;     // the last layer group was reported
    bool failed = false;
  };
  void route(RequestState request);
  // Local path: fetch the longer prefix a peer holds first when that pays (`f`), then submit.
  void submit_local(std::int32_t rank, RequestState request, const std::vector<RankMatch>& matches,
                    const FetchDecision& f);
  hal::MemoryRegion region_of(hal::DeviceId device, bool grace);
  hal::MemoryRegion prefill_region();
  void on_normal_tokens(std::int32_t rank, const StepOutcome& o);
  void on_reject(RequestId id, const std::string& reason);
  void on_prefill_done(const StepOutcome& o);
  void on_kv_ready(RequestId id, std::int64_t layers_done, std::int64_t total, std::uint64_t bytes_so_far);
  void maybe_received(RequestId id);
  void finish(RequestId id, const std::string& failure);
  void retry_pending();
  // Batches a rank's KV events and sends them to the router once per loop turn.
  void publish(const KvEvent& e);
  void flush_events(std::int32_t rank);

  rt::Runtime& rt_;
  PdSystemConfig cfg_;
  TokenStream on_tokens_;
  RequestDone on_done_;
  Router router_;
  std::unique_ptr<NormalWorkerGroup> normal_;
  std::unique_ptr<PrefillWorker> prefill_;
  std::optional<KvTransfer> transfer_;
  hal::Rdma* rdma_ = nullptr;
  std::vector<hal::Device*> normal_gpus_;
  std::uint64_t kv_bytes_per_token_ = 0;  // one copy, all layers, at the normal group's KV dtype
  std::map<std::pair<hal::DeviceId, bool>, hal::MemoryRegion> regions_;  // (GPU, its Grace?) -> region
  hal::DeviceId prefill_gpu_ = -1;       // the prefill worker's first GPU: where a cached prefix is sent
  hal::MemoryRegion prefill_region_;
  std::map<RequestId, RequestTiming> timings_;
  std::map<RequestId, Moving> moving_;
  std::deque<RequestState> pending_;  // long prompts waiting for KV room on their rank
  bool retrying_ = false;
  hal::Network* network_ = nullptr;
  hal::Address router_address_;
  std::vector<hal::Address> rank_addresses_;
  std::vector<std::vector<KvEvent>> outbox_;  // per rank, not yet sent
};

}  // namespace nvl::engine
