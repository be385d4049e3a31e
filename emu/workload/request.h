#pragma once
// One LLM call of a workload. Its labels (source, session id, sub-agent) are those of its Session.
#include <cstdint>

#include "emu/rt/time.h"
#include "emu/workload/hash_chain.h"

namespace nvl::emu {

// What a trace line may give: every request has a prompt (the scheduler needs a token to prefill), and
// no prompt or answer is longer than 2^24 tokens (16.8 M, beyond every model profile's context length).
inline constexpr std::int64_t kMinPromptTokens = 1;
inline constexpr std::int64_t kMaxRequestTokens = std::int64_t{1} << 24;

struct Request {
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  // One id per prompt block of the session's block size (see Session); equal id = same prefix up to the
  // end of that block. Ids are already namespaced, so a cache may key on them across sessions and files.
  HashChain block_hashes;
  // Closed loop: the client's gap between the previous answer and this request (tool time, human).
  rt::Duration think_time;
  // The recorded departure, measured from the start of its session (open-loop replay, stats ordering).
  rt::Duration offset;
};

}  // namespace nvl::emu
