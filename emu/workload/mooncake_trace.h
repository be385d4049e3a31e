#pragma once
// Mooncake JSONL (kvcache-ai/Mooncake FAST25 traces), one request a line:
//   {"timestamp": ms since trace start, "input_length", "output_length", "hash_ids": [one per 512-token block]}
// Ids are global within the file, so the file is one block namespace. A line becomes a one-request,
// open-loop session that starts at its timestamp; timestamps must not decrease.
// The agentic rows other simulators replay (Dynamo's mocker) are read too: lines sharing a `session_id` are
// the turns of one closed-loop session, the first starting at its timestamp, each later one `delay` (alias
// `delay_ms`) plus `tool_wait_ms` after the previous answer, or the gap between the two timestamps when no
// delay is given; `wait_for` may name only the previous turn's `request_id`. The block size of the hash ids
// is stated by the caller (LoadOptions::trace_block_tokens), 512 when not.
#include <filesystem>

#include "emu/workload/load_options.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

inline constexpr std::int32_t kMooncakeBlockTokens = 512;  // the trace's published block size

Workload load_mooncake_trace(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace nvl::emu
