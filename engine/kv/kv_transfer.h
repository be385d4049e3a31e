#pragma once
// Moves a request's KV from the prefill worker to the decode rank that will continue it, as the
// prefill writes it (layer group by layer group), with one-sided RDMA writes as Mooncake's transfer
// engine does: every prefill GPU pushes its share over its own NIC (or over NVLink when asked), so
// the receiving GPU's link is what limits the push. A write that fails or outlives the timeout is sent
// once more on the other path (NVLink for the NICs, the NICs for NVLink); each step is logged.
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "engine/hal/rdma.h"
#include "engine/kv/kv_cache_manager.h"

namespace nvl::engine {

struct KvTransferConfig {
  hal::RdmaPath path = hal::RdmaPath::scale_out;  // P/D KV over the CX8 NICs by default
  std::uint64_t region_bytes = 1ULL << 40;        // the KV pool registered on each GPU
  // A write not completed by then counts as failed (zero: no timeout). Seconds: far above what one
  // layer group of a long prompt takes on a healthy link, so only a stuck or crawling path trips it.
  rt::Duration timeout = rt::sec(5);
};

class KvTransfer {
 public:
  // `retries`: writes of this push that went again on the other path.
  using Done = std::function<void(const hal::HalError* error, std::int64_t retries)>;

  KvTransfer(hal::Rdma& rdma, std::vector<hal::DeviceId> sources, KvTransferConfig cfg);

  // Pushes `bytes` of request `id`'s KV to `dest`; `done` runs once every share has landed, or with
  // the error when a share failed on both paths.
  void push(RequestId id, hal::DeviceId dest, std::uint64_t bytes, Done done);

  const KvTransferConfig& config() const { return cfg_; }
  std::uint64_t bytes_moved() const { return bytes_moved_; }
  std::uint64_t retries() const { return retries_; }

 private:
  struct Push {
    std::size_t pending = 0;
    std::int64_t retries = 0;
    bool failed = false;
    Done done;
  };
  hal::MemoryRegion region_of(hal::DeviceId device);
  void write(std::uint64_t push_id, const hal::RdmaOp& op, bool retried);
  void write_failed(std::uint64_t push_id, const hal::RdmaOp& op, bool retried, const hal::HalError& error);
  void settle(std::uint64_t push_id, const hal::HalError* error);

  hal::Rdma& rdma_;
  std::vector<hal::DeviceId> sources_;
  KvTransferConfig cfg_;
  std::map<hal::DeviceId, hal::MemoryRegion> regions_;
  std::map<std::uint64_t, Push> pushes_;
  std::uint64_t next_push_ = 1;
  std::uint64_t bytes_moved_ = 0;
  std::uint64_t retries_ = 0;
};

}  // namespace nvl::engine
