#pragma once
// SGLang's P/D handshake for requests sent straight to the workers (sgl-router's PD mode, SGLang's
// mini_lb): a router sends one prompt to a prefill worker and to a decode worker at once, both naming
// the prefill worker's bootstrap port and one random room; the decode worker's request is served once
// both have arrived (prefilled on that prefill instance, its KV pushed to the decode rank), and the
// prefill worker answers when its part is done. Here: the halves that wait for their other half, and
// the pairs being served. Runtime thread only.
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "emu/rt/time.h"
#include "engine/kv/kv_cache_manager.h"

namespace nvl::emu::live {

// What a router named for one half of a pair.
struct PdTarget {
  std::int32_t prefill_instance = 0;
  std::uint64_t room = 0;
  bool prefill_half = false;  // sent to the prefill worker (else to a decode worker: a DP rank)
};

struct PdHalf {
  engine::RequestId id = 0;
  PdTarget target;
  std::int32_t rank = -1;  // the decode half's DP rank
  std::int64_t prompt_tokens = 0;
  std::vector<engine::BlockHash> hashes;
  std::int64_t max_tokens = 0;
  rt::Time arrival;
};

class PdPairs {
 public:
  enum class Met { waiting, paired, duplicate };
  // `h` arrives. It waits for its other half; or meets it (`other` is set: the two are a pair now); or
  // a half of the same side already holds the room (a router's mistake: `h` is not kept).
  Met arrive(PdHalf h, PdHalf& other);
  // A half still waiting leaves (cancelled, timed out): true when it was waiting.
  bool leave(engine::RequestId id);
  // The other half of a pair being served (nullopt: `id` is in none).
  std::optional<PdHalf> partner(engine::RequestId id) const;
  // The pair that `id` is a half of is over: forgotten.
  void end(engine::RequestId id);
  // Prefill halves waiting for their decode half at this instance.
  std::int64_t waiting_prefills(std::int32_t instance) const;

 private:
  using Room = std::pair<std::int32_t, std::uint64_t>;  // prefill instance, room
  std::map<Room, PdHalf> waiting_;
  std::map<engine::RequestId, Room> waiting_room_;
  std::map<engine::RequestId, PdHalf> paired_;  // by id: its other half
};

}  // namespace nvl::emu::live
