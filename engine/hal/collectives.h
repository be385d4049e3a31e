#pragma once
// Collective communication over a group of GPUs, as NCCL / DeepEP / TensorRT-LLM provide it.
// Callback-based so that a device model (a graph replay) can hand a collective over without a fiber:
// each member arrives with its part; the collective starts when every member has arrived (a slow member
// delays all), and each member's callback runs on the runtime loop when the collective is done for it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "emu/rt/time.h"
#include "engine/hal/hal_error.h"
#include "engine/hal/types.h"

namespace nvl::hal {

enum class CollectiveKind : std::uint8_t { all_to_all, all_reduce, all_gather, reduce_scatter, broadcast, send_recv };

// all_to_all: which kernel carries it, so its overheads can be those of that kernel (the MoE combine
// reduces the top-k partial outputs as they arrive). plain: a generic exchange.
enum class AllToAllRole : std::uint8_t { plain, moe_dispatch, moe_combine };

// One member's part of a collective call. Members of one call pass the same kind, name and bytes.
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::all_reduce;
  std::string name;  // for the timeline, e.g. "layer12.dispatch"
  DType dtype = DType::bf16;
  // all_reduce, all_gather, reduce_scatter, broadcast: the buffer size in bytes (NCCL's "size");
  // send_recv: the bytes this member sends to `peer`.
  std::uint64_t bytes = 0;
  // all_to_all: bytes this member sends to each member, indexed by member rank (MoE dispatch and
  // combine with top-k fan-out); the group assembles the full matrix from every member's row.
  std::vector<std::uint64_t> send_bytes;
  int root = 0;   // broadcast: the member rank that holds the data
  int peer = -1;  // send_recv: the member rank on the other side
  AllToAllRole role = AllToAllRole::plain;  // all_to_all only
};

// Ops are shared, not copied: a graph replays the same op objects step after step, and a group may keep
// them (and know a call made of the very objects of an earlier one without comparing their contents).
using SharedCollectiveOp = std::shared_ptr<const CollectiveOp>;

// Completion of one member's part: null on success, otherwise why it failed.
using CollectiveDone = std::function<void(const HalError* error)>;

class CommGroup {
 public:
  virtual ~CommGroup() = default;
  virtual const std::string& name() const = 0;
  // Member rank r is members()[r].
  virtual const std::vector<DeviceId>& members() const = 0;
  // Member `rank` arrives with its part of the next collective of this group.
  virtual void arrive(int rank, SharedCollectiveOp op, CollectiveDone done) = 0;
  // Member `rank` makes `times` more calls of the op of its last arrive() back to back over the next
  // `span`, without arriving for each: a device fast-forwarding identical layers, whose span it has
  // measured. The group carries their traffic in that span, from `lead` on (the compute before the
  // first of the calls: each period's call comes after its period's compute); `done` runs when the
  // member may go on: at its span's end, later when other traffic on the links slowed the calls. Every
  // member repeats alike; arrive()'s call numbers are not used.
  virtual void repeat(int rank, SharedCollectiveOp op, std::size_t times, rt::Duration lead, rt::Duration span,
                      CollectiveDone done) = 0;
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual std::shared_ptr<CommGroup> create_group(std::string name, std::vector<DeviceId> members) = 0;
};

}  // namespace nvl::hal
