#pragma once
// A set of identical emulated GPUs with their hosts: GPU i (DeviceId i) sits on host
// i / gpus_per_host, whose pinned memory its host's GPUs share (a Grace per 2 GPUs on GB-class
// trays, one host per 8-GPU HGX node). Copies go through a FixedBandwidthPath until the fabric
// attaches its own. What tests, calibration and (later) the harness assemble devices with.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/runtime.h"
#include "fakegpu/accounted_memory.h"
#include "fakegpu/fake_device.h"
#include "fakegpu/fixed_bandwidth_path.h"
#include "fakegpu/profile_library.h"

namespace nvl::fakegpu {

class GpuFleet {
 public:
  // count >= 1 (std::invalid_argument otherwise).
  GpuFleet(rt::Runtime& rt, const DeviceProfile& device, const HostProfile& host, int count);
  // Loads "<dir>/<name>.json" and its host profile.
  static std::unique_ptr<GpuFleet> load(rt::Runtime& rt, std::string_view name, int count,
                                        const std::filesystem::path& dir = default_profile_dir());

  int size() const { return static_cast<int>(devices_.size()); }
  FakeDevice& device(hal::DeviceId id) { return *devices_.at(static_cast<std::size_t>(id)); }
  int host_count() const { return static_cast<int>(hosts_.size()); }
  AccountedMemory& host_memory(hal::HostId id) { return *hosts_.at(static_cast<std::size_t>(id)); }
  const DeviceProfile& profile() const { return *profile_; }
  const HostProfile& host_profile() const { return host_profile_; }
  // Every device's copies go through `path` from now on (it must outlive the fleet).
  void set_transfer_path(TransferPath& path);
  // Every device: FakeDevice::set_fast_forward.
  void set_fast_forward(bool on);
  // Every device prices its kernels with `library`'s measured tables (the profile's measured_kernels),
  // or by the roofline alone ("roofline"); before any kernel is priced. A library the profile has no
  // tables for is std::invalid_argument naming those it has.
  void use_kernel_library(const std::string& library);

 private:
  std::shared_ptr<const DeviceProfile> profile_;
  HostProfile host_profile_;
  FixedBandwidthPath path_;
  std::vector<std::shared_ptr<AccountedMemory>> hosts_;
  std::vector<std::unique_ptr<FakeDevice>> devices_;
};

}  // namespace nvl::fakegpu
