#pragma once
// Where each process of a P/D deployment listens and how the router numbers the DP ranks (instance
// after instance), known to every process as a real deployment's service discovery would tell them.
// It also points at the processes themselves, for the few things they still do to one another
// in-process; each such use says why it is not a control message.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/hal/network.h"
#include "engine/sched/request_state.h"
#include "engine/system/control_plane.h"
#include "engine/system/pd_config.h"

namespace nvl::engine {

class Frontend;
class RouterProcess;
class DecodeInstanceProcess;
class PrefillInstanceProcess;
class LoadReporter;

// A global DP rank: its decoding instance, its rank inside it, its GPUs (attention TP: each holds its
// share of the rank's KV; the first also hosts its process), and where it listens.
struct RankSlot {
  std::size_t instance = 0;
  std::int32_t local = 0;
  LocalPrefill local_prefill = LocalPrefill::below_threshold;
  std::vector<hal::DeviceId> gpus;
  hal::Address address;
};

struct PdDirectory {
  hal::Address frontend;
  hal::Address router;
  std::vector<RankSlot> ranks;
  std::vector<hal::Address> prefills;  // per prefill instance
  std::int64_t block_tokens = 0;
  std::uint64_t kv_bytes_per_token = 0;  // one copy, all layers, at the decoding instances' KV dtype

  Frontend* frontend_process = nullptr;
  RouterProcess* router_process = nullptr;
  std::vector<DecodeInstanceProcess*> decode;
  std::vector<PrefillInstanceProcess*> prefill;
  LoadReporter* loads = nullptr;
  // Tokens each request's ranks have streamed so far: the index its next chunk starts at. One map over
  // every instance because a request migrated off a dead rank continues its stream where that rank
  // left it; a real deployment would carry it in the migration's ScheduleOnRank, which here would
  // change the message sizes and so the results.
  std::map<RequestId, std::int64_t> streamed;

  const RankSlot& rank(std::int32_t r) const { return ranks.at(static_cast<std::size_t>(r)); }
  DecodeInstanceProcess& decode_of(std::int32_t r) const { return *decode.at(rank(r).instance); }
  std::int32_t live_ranks() const;  // over every decoding instance
  // The prefill instance whose KV for `id` is moving to its decode rank (nullptr: none).
  PrefillInstanceProcess* moving(RequestId id) const;
};

// Sends the frontend the end of a request that failed (`why`) or was cancelled.
void end_request(ControlPlane& control, const PdDirectory& dir, hal::Address from, RequestId id, const std::string& why);

}  // namespace nvl::engine
