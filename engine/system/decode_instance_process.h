#pragma once
// A decoding instance's process: its lockstep group of DP ranks (decode-only, mixed with short
// prefills, or aggregated) and each rank's endpoint. A rank runs what the router schedules on it,
// fetches a prefix a peer holds first when the router found one worth it, takes KV room for a prompt
// a prefill instance computes and receives its KV, streams tokens to the frontend, and hands back
// the requests of a rank the router declared dead; the rank comes back after its reset or restart.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/rdma.h"
#include "engine/system/control_plane.h"
#include "engine/system/pd_config.h"
#include "engine/system/pd_directory.h"
#include "engine/system/rdma_regions.h"
#include "engine/worker/normal_worker_group.h"

namespace nvl::engine {

class DecodeInstanceProcess {
 public:
  // Takes the next global DP ranks (entered in `dir`) and listens on each rank's GPU's host.
  DecodeInstanceProcess(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, hal::Rdma* rdma,
                        const PdSystemConfig& cfg, ControlPlane& control, PdDirectory& dir, RdmaRegions& regions,
                        DecodeInstance d, std::size_t index);

  void start() { group_->start(); }
  NormalWorkerGroup& group() { return *group_; }
  const NormalWorkerGroup& group() const { return *group_; }

  // In-process, as before the split (each a control message in a real deployment; one here would
  // cross the host network and change the results):
  // the prompt's KV will not come from its prefill instance (`cause`, logged with `error`): the rank
  // prefills it itself, in the KV room it took for the transfer;
  void reprefill(std::int32_t rank, RequestId id, std::string_view cause, const std::string& error);
  // the router declared the rank dead: it leaves the group, which hands its requests to `migrate`;
  // its host resets the GPU or restarts the worker, and the rank tells the router when it is back.
  void take_out(std::int32_t rank, const std::string& why, RequestsTaken migrate);
  // What is wrong with the rank's host now (nullopt: healthy, or out already): NVML's Xid errors and
  // the process supervisor, which the router's health check reads.
  std::optional<std::string> probe(std::int32_t rank) const;

 private:
  std::int32_t local(std::int32_t rank) const { return rank - first_rank_; }
  hal::Address address(std::int32_t rank) const { return dir_.rank(rank).address; }
  void on_message(std::int32_t rank, const proto::ControlMessage& m);
  void schedule(std::int32_t rank, const proto::ScheduleOnRank& s);
  void receive(std::int32_t rank, std::size_t prefill_instance, RequestState request);
  void cancel(std::int32_t rank, const proto::Cancel& c);
  void transfer_done(std::int32_t rank, const proto::KvTransferDone& d);
  void on_tokens(std::int32_t rank, const StepOutcome& o);
  // A request that reached a rank declared dead goes back to the router (true). One moved off a dead
  // rank resumes here from its delivered tokens: on the local path (its prefix fetched first where the
  // router found one, e.g. in the dead rank's Grace memory) it goes on as usual (false); sent for a
  // prefill instance it is prefilled here instead (true).
  bool redirect(std::int32_t rank, RequestState& request, bool prefill_path);

  rt::Runtime& rt_;
  const PdSystemConfig& cfg_;
  ControlPlane& control_;
  PdDirectory& dir_;
  RdmaRegions& regions_;
  hal::Rdma* rdma_;
  std::int32_t first_rank_;
  std::map<hal::DeviceId, hal::Device*> gpus_;
  std::unique_ptr<NormalWorkerGroup> group_;
};

}  // namespace nvl::engine
