#pragma once
// One-sided RDMA, as verbs (ibv_reg_mr, RDMA READ/WRITE) or UCX provide it: registered memory regions
// in device HBM (GPUDirect) or host pinned memory, read and write between regions, completions.
// Callbacks run on the runtime loop; the *_wait forms block the calling fiber instead.
#include <cstdint>
#include <functional>
#include <string>

#include "emu/rt/runtime.h"
#include "engine/hal/hal_error.h"
#include "engine/hal/types.h"

namespace nvl::hal {

// Which interconnect carries an operation between two GPUs: NVLink inside one NVLink domain, or the
// scale-out NICs (CX8/CX7). automatic takes NVLink when both ends share a domain, else the NICs.
enum class RdmaPath : std::uint8_t { automatic, nvlink, scale_out };

// A registered region: the key a peer needs to address it. Value type; id 0 is "no region".
struct MemoryRegion {
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;
};

struct RdmaOp {
  MemoryRegion local;
  std::uint64_t local_offset = 0;
  MemoryRegion remote;
  std::uint64_t remote_offset = 0;
  std::uint64_t bytes = 0;
  RdmaPath path = RdmaPath::automatic;
  std::string name;  // for the timeline, e.g. "kv.req42.layer3"
};

// Null on success, otherwise why the operation failed (naming the link, NIC or device).
using RdmaDone = std::function<void(const HalError* error)>;

class Rdma {
 public:
  virtual ~Rdma() = default;

  // Device HBM on `device`, reached by the NIC nearest to it (GPUDirect RDMA) or over NVLink.
  virtual MemoryRegion register_device_memory(DeviceId device, std::uint64_t bytes) = 0;
  // Pinned host memory on `host`, registered with the host's NIC `nic` (0..NICs of that host - 1).
  virtual MemoryRegion register_host_memory(HostId host, std::uint64_t bytes, int nic = 0) = 0;
  virtual void deregister(MemoryRegion region) = 0;

  // Copies local -> remote (write) or remote -> local (read). Offsets and sizes are checked against the
  // regions (std::out_of_range); an unknown region is std::invalid_argument.
  virtual void write(const RdmaOp& op, RdmaDone done) = 0;
  virtual void read(const RdmaOp& op, RdmaDone done) = 0;

  virtual rt::Runtime& runtime() = 0;

  // Fiber forms: block until the completion; throw the HalError on failure.
  void write_wait(const RdmaOp& op);
  void read_wait(const RdmaOp& op);
};

}  // namespace nvl::hal
