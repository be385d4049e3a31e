#pragma once
// The host a GPU's pinned memory lives on: a Grace CPU (GB-class trays, LPDDR5X, NVLink-C2C to its
// GPUs) or an x86 HGX node. Loaded from profiles/<name>.json.
#include <cstdint>
#include <filesystem>
#include <string>

namespace nvl::fakegpu {

enum class HostKind : std::uint8_t { grace, x86 };

struct HostProfile {
  std::string name;
  HostKind kind = HostKind::grace;
  std::uint64_t memory_bytes = 0;
  double memory_bytes_per_s = 0;
  // Grace only: NVLink-C2C, both directions together, shared by the Grace's GPUs (0 on x86).
  double c2c_bytes_per_s = 0;
};

HostProfile load_host_profile(const std::filesystem::path& file);

}  // namespace nvl::fakegpu
