#pragma once
// Identities and value types shared by every engine/hal interface.
#include <cstdint>
#include <string_view>

namespace nvl::hal {

// A GPU's index in the cluster, 0..N-1 (rack-major: rack, tray, slot). Names such as
// "rack0/tray3/gpu2" come from the topology.
using DeviceId = std::int32_t;
// A host endpoint (one per Grace CPU or HGX node CPU) for control-plane messages and pinned memory.
using HostId = std::int32_t;

enum class DType : std::uint8_t { fp4, fp8, bf16, fp16, fp32, int8 };

std::string_view to_string(DType d);
// Accepts the names to_string gives ("fp8", "bf16", ...); anything else throws std::invalid_argument.
DType dtype_from_string(std::string_view s);
// Storage size in bits (fp4 is 4).
int bits_of(DType d);

// Xid-like causes of device errors, numbered as NVIDIA's Xid catalogue numbers them.
enum class Xid : std::int32_t {
  none = 0,
  ecc_uncorrectable = 48,  // the running operation fails; the device must be drained and reset
  nvlink_error = 74,       // reported to the fabric
  gpu_lost = 79,           // fallen off the bus: every pending and later operation fails
};

std::string_view to_string(Xid x);

}  // namespace nvl::hal
