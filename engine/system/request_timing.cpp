#include "engine/system/request_timing.h"

#include <algorithm>

namespace nvl::engine {

namespace {
rt::Duration between(rt::Time from, const std::optional<rt::Time>& to) {
  return to ? std::max(rt::Duration(), *to - from) : rt::Duration();
}
}  // namespace

rt::Duration RequestTiming::prefill() const {
  return between(routed, path == PrefillPath::prefill_worker ? prefill_done : first_token);
}

rt::Duration RequestTiming::kv_transfer() const {
  return prefill_done ? between(*prefill_done, kv_arrived) : rt::Duration();
}

rt::Duration RequestTiming::first_decode_step() const {
  return first_token ? between(*first_token, first_decode) : rt::Duration();
}

rt::Duration RequestTiming::decode() const {
  return first_decode ? between(*first_decode, finished) : rt::Duration();
}

}  // namespace nvl::engine
