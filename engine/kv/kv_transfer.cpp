#include "engine/kv/kv_transfer.h"

#include <stdexcept>
#include <string>

namespace nvl::engine {

KvTransfer::KvTransfer(hal::Rdma& rdma, std::vector<hal::DeviceId> sources, KvTransferConfig cfg)
    : rdma_(rdma), sources_(std::move(sources)), cfg_(cfg) {
  if (sources_.empty()) throw std::invalid_argument("KV transfer: needs at least one source GPU");
}

hal::MemoryRegion KvTransfer::region_of(hal::DeviceId device) {
  const auto it = regions_.find(device);
  if (it != regions_.end()) return it->second;
  return regions_.emplace(device, rdma_.register_device_memory(device, cfg_.region_bytes)).first->second;
}

void KvTransfer::push(RequestId id, hal::DeviceId dest, std::uint64_t bytes, Done done) {
  const std::uint64_t push_id = next_push_++;
  Push& p = pushes_[push_id];
  p.done = std::move(done);
  const hal::MemoryRegion remote = region_of(dest);
  // Each source sends an even share; the remainder goes with the first.
  const std::uint64_t n = sources_.size();
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t share = bytes / n + (i == 0 ? bytes % n : 0);
    if (share == 0) continue;
    hal::RdmaOp op;
    op.local = region_of(sources_[i]);
    op.remote = remote;
    op.bytes = share;
    op.path = cfg_.path;
    op.name = "kv.req" + std::to_string(id) + ".from" + std::to_string(sources_[i]);
    ++p.pending;
    write(push_id, op, false);
  }
  if (p.pending == 0) settle(push_id, nullptr);
}

void KvTransfer::write(std::uint64_t push_id, const hal::RdmaOp& op, bool retried) {
  rdma_.write(op, [this, push_id, op, retried](const hal::HalError* error) {
    if (error == nullptr) {
      bytes_moved_ += op.bytes;
      settle(push_id, nullptr);
      return;
    }
    if (!retried) {
      // Once more on the other interconnect: NVLink when the NICs failed, the NICs when NVLink did.
      hal::RdmaOp again = op;
      again.path = op.path == hal::RdmaPath::nvlink ? hal::RdmaPath::scale_out : hal::RdmaPath::nvlink;
      ++retries_;
      write(push_id, again, true);
      return;
    }
    settle(push_id, error);
  });
}

void KvTransfer::settle(std::uint64_t push_id, const hal::HalError* error) {
  auto it = pushes_.find(push_id);
  Push& p = it->second;
  if (error != nullptr && !p.failed) {
    p.failed = true;
    p.done(error);  // the first failure decides; later completions of this push are ignored
  }
  if (p.pending > 0) --p.pending;
  if (p.pending == 0) {
    if (!p.failed) p.done(nullptr);
    pushes_.erase(it);
  }
}

}  // namespace nvl::engine
