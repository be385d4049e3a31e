#pragma once
// Where a request's time went, for reports: queueing, prefill, KV transfer, first token, decode.
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
  std::uint64_t transfer_bytes = 0;
  rt::Time arrival;
  rt::Time routed;                  // left the router's queue
  std::optional<rt::Time> prefill_done;   // prefill worker path: its first token sampled
  std::optional<rt::Time> kv_arrived;     // prefill worker path: the last byte at the decode rank
  std::optional<rt::Time> first_token;
  std::optional<rt::Time> finished;
  std::string failure;  // empty unless the request failed; names the cause
};

}  // namespace nvl::engine
