#pragma once
// A prefill instance's process: its TP/EP/PP (or DP attention + EP) prefill worker, and the KV of each
// prompt it computes, pushed layer group by layer group (from the pipeline stage, or the DP rank, that
// holds them) to every GPU of the decode rank that took room for it, while the prefill continues. With
// DP ranks it dispatches the prompts over them round-robin, as SGLang's DP controller does by default. Declared dead, it drops what it
// held; its host resets its GPUs or restarts it, unless one of them is lost.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/rdma.h"
#include "engine/kv/kv_transfer.h"
#include "engine/system/control_plane.h"
#include "engine/system/health_monitor.h"
#include "engine/system/pd_config.h"
#include "engine/system/pd_directory.h"
#include "engine/worker/prefill_worker.h"

namespace nvl::engine {

class PrefillInstanceProcess {
 public:
  PrefillInstanceProcess(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, hal::Rdma& rdma,
                         const PdSystemConfig& cfg, ControlPlane& control, PdDirectory& dir, PrefillInstance p,
                         std::size_t index);

  void start() { worker_->start(); }
  PrefillWorker& worker() { return *worker_; }
  const std::vector<hal::Device*>& gpus() const { return gpus_; }
  hal::Address address() const { return address_; }
  std::uint64_t prefilled() const { return prefilled_; }
  std::uint64_t transfer_bytes() const;
  // Whether the KV of `id` is on its way from here (or will be, once the prompt is computed).
  bool moving(RequestId id) const { return moving_.contains(id); }

  // In-process, as before the split (each a control message, or a field of one, in a real deployment;
  // here it would cross the host network, or change a message's size, and so the results):
  // the decode rank took room for the prompt and says where its KV goes (the prompt's DP rank here is
  // chosen then, so a prefix the decode rank sends lands where the prompt runs);
  struct Destination {
    std::int32_t rank = 0;
    double share = 1.0;                  // of the prompt's KV that the rank does not already hold
    std::vector<hal::DeviceId> gpus;     // every GPU of the rank (attention TP) gets its share of each block
    std::uint64_t gpu_block_bytes = 0;   // of a block, what one of them keeps
    std::uint64_t block_bytes = 0;
  };
  void expect(RequestId id, Destination to);
  // where a decode rank writes the prefix it holds for an expected request: on its DP rank's first GPU
  // (the region the two exchange when they connect);
  hal::MemoryRegion region(RequestId id);
  // the request no longer comes here (its schedule was lost): nothing of it is held yet;
  void forget(RequestId id) { moving_.erase(id); }
  // the request stopped (abandoned, or its decode rank died): its prefill and its KV go;
  void stop(RequestId id);
  // declared dead by the router: the worker drops everything; the requests it held, and their ranks;
  std::vector<std::pair<RequestId, std::int32_t>> take_down(const std::string& why);
  // then its host resets it or restarts it, and tells the router when it is back;
  void recover(const std::string& why);
  // what is wrong with its host now (nullopt: healthy, or out already): NVML and the supervisor.
  std::optional<std::string> probe() const;

 private:
  struct Moving {
    Destination to;
    std::int32_t source_rank = 0;  // the worker's DP rank that prefills it
    std::uint64_t sent = 0;      // bytes of the prompt's KV reported ready so far (one copy, all layers done)
    std::int64_t layers_sent = 0;
    std::size_t pushes = 0;      // pushes in flight
    bool all_layers = false;     // the last layer group was reported
    std::string error;           // a push failed for good: why
  };
  void on_message(const proto::ControlMessage& m);
  void schedule(const proto::ScheduleOnRank& s);
  void on_kv_ready(RequestId id, std::int64_t layers_done, std::int64_t total, std::uint64_t bytes_so_far);
  void maybe_received(RequestId id);

  rt::Runtime& rt_;
  const PdSystemConfig& cfg_;
  ControlPlane& control_;
  PdDirectory& dir_;
  hal::Rdma& rdma_;
  std::size_t index_;
  std::vector<hal::Device*> gpus_;
  std::unique_ptr<PrefillWorker> worker_;
  hal::Address address_;
  // Per pipeline stage and DP rank (stage * ranks + rank): its layers' KV leaves from its GPUs.
  std::vector<KvTransfer> transfers_;
  std::vector<hal::MemoryRegion> regions_;  // per DP rank, registered when first written to
  std::int32_t next_rank_ = 0;              // the DP rank the next expected prompt goes to
  std::uint64_t prefilled_ = 0;        // prompts it finished
  std::map<RequestId, Moving> moving_;
};

}  // namespace nvl::engine
