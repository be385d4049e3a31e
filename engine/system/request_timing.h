#pragma once
// Where a request's time went, for reports: queueing, prefill, KV transfer, first decode step, decode.
#include <cstdint>
#include <optional>
#include <string>

#include "emu/rt/time.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/router/router.h"

namespace nvl::engine {

struct RequestTiming {
  RequestId id = 0;
  PrefillPath path = PrefillPath::local;
  std::int32_t rank = -1;
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;  // what the router found cached anywhere
  std::int64_t output_tokens = 0;  // delivered
  std::uint64_t transfer_bytes = 0;        // prompt KV that reached the decode rank from the prefill worker
  std::int64_t transfer_retries = 0;       // KV writes sent again on the other path
  bool reprefilled = false;  // the KV transfer failed for good, or the prefill worker died: prefilled on the DP rank
  rt::Time arrival;
  rt::Time routed;                  // left the router's queue
  std::optional<rt::Time> prefill_done;   // prefill worker path: its first token sampled
  std::optional<rt::Time> kv_arrived;     // prefill worker path: the last byte at the decode rank
  std::optional<rt::Time> first_token;
  std::optional<rt::Time> first_decode;   // the token after the first: the first decode step's output
  std::optional<rt::Time> finished;
  std::string failure;  // empty unless the request failed; names the cause

  // The breakdown (zero for a part the request did not reach or does not have):
  // waiting at the router (and in its queue while no rank had KV room);
  rt::Duration queue() const { return routed - arrival; }
  // from routing to the first token computed: on the local path this includes waiting on the rank;
  rt::Duration prefill() const;
  // prefill worker path: what the layer-wise push left after the prefill (the rest overlapped it);
  rt::Duration kv_transfer() const;
  // from the first token to the second;
  rt::Duration first_decode_step() const;
  // from the second token to the last.
  rt::Duration decode() const;
};

}  // namespace nvl::engine
