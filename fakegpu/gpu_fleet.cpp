#include "fakegpu/gpu_fleet.h"

#include <stdexcept>
#include <string>

namespace nvl::fakegpu {

GpuFleet::GpuFleet(rt::Runtime& rt, const DeviceProfile& device, const HostProfile& host, int count)
    : profile_(std::make_shared<const DeviceProfile>(device)), host_profile_(host), path_(rt) {
  if (count < 1) throw std::invalid_argument("a fleet needs at least one GPU, got " + std::to_string(count));
  const int per_host = profile_->gpus_per_host;
  const int hosts = (count + per_host - 1) / per_host;
  for (hal::HostId h = 0; h < hosts; ++h) {
    hosts_.push_back(std::make_shared<AccountedMemory>(rt, hal::MemoryLocation{hal::MemoryKind::pinned_host, h},
                                                       host.memory_bytes, "host" + std::to_string(h)));
  }
  for (hal::DeviceId id = 0; id < count; ++id) {
    const hal::HostId h = id / per_host;
    path_.add_device(id, *profile_, host_profile_);
    devices_.push_back(std::make_unique<FakeDevice>(rt, id, profile_, h, hosts_[static_cast<std::size_t>(h)], path_));
  }
}

std::unique_ptr<GpuFleet> GpuFleet::load(rt::Runtime& rt, std::string_view name, int count,
                                         const std::filesystem::path& dir) {
  const DeviceProfile device = load_device_profile_named(name, dir);
  return std::make_unique<GpuFleet>(rt, device, load_host_profile_for(device, dir), count);
}

void GpuFleet::set_fast_forward(bool on) {
  for (auto& d : devices_) d->set_fast_forward(on);
}

void GpuFleet::use_kernel_library(const std::string& library) {
  if (library == "roofline") return;
  const auto at = profile_->measured_kernels.find(library);
  if (at == profile_->measured_kernels.end()) {
    throw std::invalid_argument(profile_->name + " has no measured kernel tables for library '" + library +
                                "' (expected one of: " + profile_->kernel_libraries() + ")");
  }
  const MeasuredKernels tables = MeasuredKernels::load(at->second);
  for (auto& d : devices_) d->use_measured_kernels(tables);
}

void GpuFleet::set_transfer_path(TransferPath& path) {
  for (auto& d : devices_) d->set_transfer_path(path);
}

}  // namespace nvl::fakegpu
