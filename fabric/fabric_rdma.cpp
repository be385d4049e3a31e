#include "fabric/fabric_rdma.h"

#include <stdexcept>

namespace nvl::fabric {

hal::MemoryRegion FabricRdma::register_device_memory(hal::DeviceId device, std::uint64_t bytes) {
  if (device < 0 || device >= fabric_.topology().gpu_count()) {
    throw std::invalid_argument("rdma: no GPU " + std::to_string(device));
  }
  const std::uint64_t id = next_id_++;
  regions_.emplace(id, Region{Endpoint::gpu(device), bytes});
  return hal::MemoryRegion{id, bytes};
}

hal::MemoryRegion FabricRdma::register_host_memory(hal::HostId host, std::uint64_t bytes, int nic) {
  if (host < 0 || host >= fabric_.topology().host_count()) throw std::invalid_argument("rdma: no host " + std::to_string(host));
  const auto& nics = fabric_.topology().host(host).nics;
  if (nic < 0 || nic >= static_cast<int>(nics.size())) {
    throw std::invalid_argument("rdma: host " + std::to_string(host) + " has no NIC " + std::to_string(nic));
  }
  const std::uint64_t id = next_id_++;
  regions_.emplace(id, Region{Endpoint::host(host, nics[static_cast<std::size_t>(nic)]), bytes});
  return hal::MemoryRegion{id, bytes};
}

void FabricRdma::deregister(hal::MemoryRegion region) { regions_.erase(region.id); }

const FabricRdma::Region& FabricRdma::region(const hal::MemoryRegion& r) const {
  const auto it = regions_.find(r.id);
  if (it == regions_.end()) throw std::invalid_argument("rdma: unknown memory region " + std::to_string(r.id));
  return it->second;
}

void FabricRdma::check(const hal::RdmaOp& op) const {
  const Region& l = region(op.local);
  const Region& r = region(op.remote);
  if (op.local_offset + op.bytes > l.bytes || op.local_offset + op.bytes < op.local_offset) {
    throw std::out_of_range("rdma '" + op.name + "': local range past the region's " + std::to_string(l.bytes) + " bytes");
  }
  if (op.remote_offset + op.bytes > r.bytes || op.remote_offset + op.bytes < op.remote_offset) {
    throw std::out_of_range("rdma '" + op.name + "': remote range past the region's " + std::to_string(r.bytes) + " bytes");
  }
}

void FabricRdma::move(const Endpoint& src, const Endpoint& dst, const hal::RdmaOp& op, const char* verb,
                      hal::RdmaDone done) {
  const NodeProfile& p = fabric_.profile();
  fabric_.transfer(src, dst, op.bytes, op.path, p.rdma_efficiency, p.rdma_overhead,
                   std::string("rdma ") + verb + " " + op.name, std::move(done));
}

void FabricRdma::write(const hal::RdmaOp& op, hal::RdmaDone done) {
  check(op);
  move(region(op.local).at, region(op.remote).at, op, "write", std::move(done));
}

void FabricRdma::read(const hal::RdmaOp& op, hal::RdmaDone done) {
  check(op);
  move(region(op.remote).at, region(op.local).at, op, "read", std::move(done));
}

}  // namespace nvl::fabric
