#pragma once
// What a P/D deployment is made of (its decoding and prefill instances and the system's options), and
// the callbacks through which it hands tokens, ends and health answers back.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "emu/rt/time.h"
#include "engine/hal/device.h"
#include "engine/kv/kv_transfer.h"
#include "engine/router/fetch_planner.h"
#include "engine/router/router.h"
#include "engine/system/health_monitor.h"
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
  // Every rank publishes its load this often while there is work (the router routes from the last
  // reports, plus what it has sent since): about one decode step, as Dynamo's workers publish per step.
  rt::Duration load_report_interval = rt::ms(10);
  // The normal GPUs' KV is one pool over NVLink: a prefix on any rank's GPU is read, not recomputed,
  // so routing need not follow the cache (router policy "pooled").
  bool kv_pool = false;
  // Noticing dead ranks, and how long a GPU reset and a worker restart take (engine/system/router_health.cpp).
  HealthConfig health;
};

// Tokens as they are delivered: `count` more for request `id` (first: the first token is among them).
using TokenStream = std::function<void(RequestId id, std::int64_t count, bool first, bool finished)>;
// A request is over (finished, or failed with a reason in its timing).
using RequestDone = std::function<void(const RequestTiming& timing)>;
// The answer to a health check: whether the rank says it is healthy, and what it or the network said.
using HealthDone = std::function<void(bool healthy, const std::string& detail)>;

// Where a decoding instance's prompts are prefilled.
enum class LocalPrefill : std::uint8_t {
  below_threshold,  // mixed: prompts whose uncached part is under the router's threshold, here
  never,            // decode: every prompt on a prefill instance (here only when none is up)
  always,           // aggregated: every prompt here (no P/D)
};

// One instance of a pool that decodes: its GPUs (DP rank r on gpus [r*tp, (r+1)*tp)) and its group.
struct DecodeInstance {
  std::string name;  // "<pool>/<index>", in logs
  std::vector<hal::Device*> gpus;
  NormalGroupConfig group;
  LocalPrefill local_prefill = LocalPrefill::below_threshold;
};

// One instance of a prefill pool.
struct PrefillInstance {
  std::string name;
  std::vector<hal::Device*> gpus;
  PrefillWorkerConfig worker;
};

struct PdDeployment {
  std::vector<DecodeInstance> decode;    // at least one; their DP ranks are the router's ranks, in order
  std::vector<PrefillInstance> prefill;  // none: every prompt prefilled on its DP rank
  PdSystemConfig system;
};

}  // namespace nvl::engine
