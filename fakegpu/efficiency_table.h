#pragma once
// Achieved fraction of peak per kernel kind, for one GPU architecture (kernel libraries reach about
// the same fraction on every device of an architecture). Loaded from profiles/efficiency_<arch>.json.
//
// The curve: efficiency(size) = efficiency_max * size / (size + half_size), for compute (size in
// FLOPs, rate peak(dtype)) and for memory (size in bytes, rate HBM bandwidth). A kernel of half_size
// reaches half the calibrated efficiency; large kernels approach it. Equivalently the time is
// (size + half_size) / (rate * efficiency_max): a fixed fill-and-drain cost plus streaming at the
// calibrated rate, which is why small shapes come out latency-bound.
#include <array>
#include <filesystem>
#include <string>

#include "engine/hal/device_info.h"
#include "engine/hal/kernel.h"

namespace nvl::fakegpu {

struct KindEfficiency {
  // Indexed by DType; dtypes the file does not name get its "default".
  std::array<double, hal::kDTypeCount> compute_efficiency{};
  double compute_half_flops = 0;
  double memory_efficiency = 0;
  double memory_half_bytes = 0;
};

struct EfficiencyTable {
  std::string architecture;
  std::array<KindEfficiency, hal::kKernelKindCount> kinds{};

  const KindEfficiency& of(hal::KernelKind k) const { return kinds[static_cast<std::size_t>(k)]; }
};

// Every kernel kind must be present; unknown keys, missing keys and numbers out of range are
// InputErrors naming the file and key (emu/rt/json_reader.h).
EfficiencyTable load_efficiency_table(const std::filesystem::path& file);

}  // namespace nvl::fakegpu
