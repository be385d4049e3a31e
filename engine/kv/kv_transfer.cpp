#include "engine/kv/kv_transfer.h"

#include <memory>
#include <stdexcept>
#include <string>

namespace nvl::engine {

namespace {
const char* path_name(hal::RdmaPath p) {
  switch (p) {
    case hal::RdmaPath::nvlink: return "nvlink";
    case hal::RdmaPath::scale_out: return "rdma";
    case hal::RdmaPath::automatic: break;
  }
  return "automatic";
}
}  // namespace

KvTransfer::KvTransfer(hal::Rdma& rdma, std::vector<hal::DeviceId> sources, KvTransferConfig cfg)
    : rdma_(rdma), sources_(std::move(sources)), cfg_(cfg) {
  if (sources_.empty()) throw std::invalid_argument("KV transfer: needs at least one source GPU");
  if (cfg_.timeout < rt::Duration()) throw std::invalid_argument("KV transfer: the timeout must not be negative");
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
  // Whichever comes first, the completion or the timeout, decides; the other is ignored.
  auto decided = std::make_shared<bool>(false);
  auto timer = std::make_shared<rt::TimerHandle>();
  if (cfg_.timeout > rt::Duration()) {
    *timer = rdma_.runtime().call_after(cfg_.timeout, [this, push_id, op, retried, decided] {
      if (*decided) return;
      *decided = true;
      write_failed(push_id, op, retried,
                   hal::HalError(-1, "kv_transfer", hal::Xid::none,
                                 op.name + " over " + path_name(op.path) + " timed out after " + rt::to_string(cfg_.timeout)));
    });
  }
  rdma_.write(op, [this, push_id, op, retried, decided, timer](const hal::HalError* error) {
    if (*decided) return;  // already timed out and given up on
    *decided = true;
    timer->cancel();
    if (error != nullptr) {
      write_failed(push_id, op, retried, *error);
      return;
    }
    bytes_moved_ += op.bytes;
    settle(push_id, nullptr);
  });
}

void KvTransfer::write_failed(std::uint64_t push_id, const hal::RdmaOp& op, bool retried, const hal::HalError& error) {
  if (retried) {
    rdma_.runtime().record("kv_transfer", "write_failed",
                           {{"op", op.name}, {"path", path_name(op.path)}, {"error", error.what()}, {"next", "give_up"}},
                           rt::Severity::warning);
    settle(push_id, &error);
    return;
  }
  // Once more on the other interconnect: NVLink when the NICs failed, the NICs when NVLink did.
  hal::RdmaOp again = op;
  again.path = op.path == hal::RdmaPath::nvlink ? hal::RdmaPath::scale_out : hal::RdmaPath::nvlink;
  rdma_.runtime().record("kv_transfer", "write_failed",
                         {{"op", op.name}, {"path", path_name(op.path)}, {"error", error.what()},
                          {"next", std::string("retry_over_") + path_name(again.path)}},
                         rt::Severity::warning);
  ++retries_;
  ++pushes_.at(push_id).retries;
  write(push_id, again, true);
}

void KvTransfer::settle(std::uint64_t push_id, const hal::HalError* error) {
  auto it = pushes_.find(push_id);
  Push& p = it->second;
  if (error != nullptr && !p.failed) {
    p.failed = true;
    p.done(error, p.retries);  // the first failure decides; later completions of this push are ignored
  }
  if (p.pending > 0) --p.pending;
  if (p.pending == 0) {
    if (!p.failed) p.done(nullptr, p.retries);
    pushes_.erase(it);
  }
}

}  // namespace nvl::engine
