#pragma once
// Azure LLM inference trace CSV (Azure/AzurePublicDataset 2023): a header
// `TIMESTAMP,ContextTokens,GeneratedTokens`, then `2023-11-16 18:15:46.6805900,374,44` a line.
// It has no prefix information: every request gets its own unique block hashes (no sharing at all), in
// blocks of kAzureBlockTokens. Each line is a one-request open-loop session, timed from the first line.
#include <filesystem>

#include "emu/workload/load_options.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

// The trace has no blocks; this size only sets how many unique hashes a prompt gets.
inline constexpr std::int32_t kAzureBlockTokens = 64;

Workload load_azure_trace(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace nvl::emu
