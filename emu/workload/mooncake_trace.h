#pragma once
// Mooncake JSONL (kvcache-ai/Mooncake FAST25 traces), one request a line:
//   {"timestamp": ms since trace start, "input_length", "output_length", "hash_ids": [one per 512-token block]}
// Ids are global within the file, so the file is one block namespace. Each line becomes a one-request,
// open-loop session that starts at its timestamp; timestamps must not decrease.
#include <filesystem>

#include "emu/workload/load_options.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

inline constexpr std::int32_t kMooncakeBlockTokens = 512;  // the trace's published block size

Workload load_mooncake_trace(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace nvl::emu
