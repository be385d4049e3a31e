#pragma once
// A request as one rank's scheduler sees it: its prompt (length and block hashes), how much of it is
// computed, how many output tokens it has and wants.
#include <cstdint>
#include <vector>

#include "emu/rt/time.h"
#include "engine/kv/kv_cache_manager.h"

namespace nvl::engine {

struct RequestState {
  // receiving: its prompt's KV is being transferred in from a prefill worker; it is not scheduled.
  enum class Phase : std::uint8_t { waiting, prefill, receiving, decode, finished };

  RequestId id = 0;
  rt::Time arrival;
  std::int64_t prompt_tokens = 0;
  std::vector<BlockHash> prompt_hashes;  // one per full prompt block, at the KV cache's block size
  std::int64_t max_output_tokens = 1;
  // Sent straight to this DP rank's own endpoint (-1: to the router's): served and prefilled there,
  // the router's choice bypassed, as a worker serves what a client sends it directly.
  std::int32_t target_rank = -1;
  // With target_rank: prefilled by this prefill instance, its KV pushed to target_rank (-1: prefilled on
  // target_rank), the P/D pair a router chose and named to both workers (SGLang's bootstrap room).
  std::int32_t target_prefill_instance = -1;
  // Keep the KV after the last token until release_held() (a prefill whose KV is still being sent).
  bool hold_kv_after_finish = false;

  Phase phase = Phase::waiting;
  std::int64_t computed_tokens = 0;  // tokens whose KV exists (cached prefix + prefilled + decoded)
  std::int64_t output_tokens = 0;    // tokens delivered so far
  std::int64_t cached_tokens = 0;    // prefix found in the cache at the last admission
  std::int64_t preemptions = 0;
  bool in_step = false;    // part of the step being run: a cancel waits for the step to complete
  // Its cached prefix is still loading from Grace (admitted, KV taken): not scheduled until loaded(), as
  // vLLM keeps a request whose connector loads KV asynchronously in WAITING_FOR_REMOTE_KVS.
  bool kv_loading = false;
  bool cancelled = false;

  // What must be in the KV cache before the next output token: the prompt plus every output token
  // but the newest (whose KV the next decode step writes).
  std::int64_t context_tokens() const { return prompt_tokens + std::max<std::int64_t>(output_tokens - 1, 0); }
  // Tokens to prefill at admission: the prompt, and after a preemption also the outputs delivered so far.
  std::int64_t prefill_target() const { return output_tokens == 0 ? prompt_tokens : context_tokens() + 1; }
  bool done() const { return output_tokens >= max_output_tokens; }
};

}  // namespace nvl::engine
