#pragma once
// The facts of one GPU model: compute, HBM, SMs, how it reaches its host, launch overheads, and its
// architecture's efficiency table. Loaded from profiles/<name>.json; every number there names its
// source. Interconnect bandwidths belong to the fabric's topology; the peer figure here is only the
// default used when no fabric is attached.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "emu/rt/time.h"
#include "engine/hal/device_info.h"
#include "fakegpu/efficiency_table.h"
#include "fakegpu/measured_kernels.h"

namespace nvl::fakegpu {

enum class HostLinkKind : std::uint8_t { nvlink_c2c, pcie };

struct DeviceProfile {
  std::string name;
  std::string architecture;
  int sm_count = 0;
  std::uint64_t hbm_bytes = 0;         // as sold
  std::uint64_t hbm_usable_bytes = 0;  // what allocations may use
  double hbm_bytes_per_s = 0;
  std::array<double, hal::kDTypeCount> peak_flops_per_s{};  // by DType; 0: no such path
  std::string host_profile;  // file name (without .json) of the host profile
  int gpus_per_host = 0;
  HostLinkKind host_link = HostLinkKind::pcie;
  double host_link_bytes_per_s = 0;     // one direction, one GPU
  double default_peer_bytes_per_s = 0;  // one direction; when no fabric prices peer copies
  rt::Duration kernel_launch;           // per kernel launched on its own
  rt::Duration graph_launch;            // per graph launch
  rt::Duration graph_node;              // per kernel inside a graph
  // Under a thermal throttle to clock factor f, memory-bound work runs at 1 - coupling x (1 - f) of
  // the HBM rate: the HBM clock is not lowered, but the SMs issuing the requests are.
  double throttle_memory_coupling = 0;
  EfficiencyTable efficiency;
  // Kernel libraries (sglang, trtllm) with measured timings on this GPU: library -> its table files.
  std::map<std::string, MeasuredKernelFiles> measured_kernels;

  double peak(hal::DType d) const { return peak_flops_per_s[static_cast<std::size_t>(d)]; }
  // Whether the device runs `d` on its tensor cores (FP4: Blackwell only); kernels of a dtype
  // without a peak cannot be priced (CostModel throws).
  bool has_peak(hal::DType d) const { return peak(d) > 0; }
  // "roofline" and the libraries of measured_kernels, for messages that list the choices.
  std::string kernel_libraries() const;
};

// Reads the device file and the efficiency_<architecture>.json beside it.
DeviceProfile load_device_profile(const std::filesystem::path& file);

}  // namespace nvl::fakegpu
