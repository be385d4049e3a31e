#pragma once
// A P/D system on an emulated GB300 NVL72 for the engine tests: DeepSeek-V3, eight normal ranks (GPUs
// 0-7) and a TP8 prefill worker (GPUs 64-71, or the second rack's first eight with two racks).
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/system/pd_system.h"
#include "fabric/fabric_rdma.h"
#include "fabric/host_network.h"
#include "tests/engine/test_request.h"

namespace nvl::engine::pd_test {

using test::request;

// DeepSeek-V3 FP8 KV, one copy: 576 bytes per token and layer over 61 layers (REFERENCE.md §2).
inline constexpr std::uint64_t kKvBytesPerToken = 35'136;

struct RigOptions {
  std::string policy = "cache_aware";
  bool fetch = true;
  bool over_network = false;
  int racks = 1;  // 2: the prefill worker sits in the second rack (no NVLink to the normal ranks)
  std::function<void(PdDeployment&)> tweak;
};

// Options set by `set` on the defaults.
inline RigOptions options(const std::function<void(RigOptions&)>& set) {
  RigOptions o;
  set(o);
  return o;
}

struct Rig {
  explicit Rig(RigOptions o = {})
      : cluster(rt, "gb300", "gb300-nvl72", 72 * o.racks, o.racks),
        rdma(cluster.fabric()),
        network(cluster.fabric()),
        model(load_model_profile(model_profile_path("deepseek-v3"))) {
    rt.log().keep_records(true);
    PdDeployment d;
    d.decode.push_back(DecodeInstance{.name = "dep/0", .gpus = cluster.devices(0, 8), .group = {}});
    d.prefill.push_back(PrefillInstance{.name = "prefill/0", .gpus = cluster.devices(o.racks > 1 ? 72 : 64, 8), .worker = {}});
    d.system.router.policy = o.policy;
    d.system.fetch_remote_prefix = o.fetch;
    if (o.tweak) o.tweak(d);
    system = std::make_unique<PdSystem>(
        rt, model, cluster.collectives(), &rdma, std::move(d),
        [this](RequestId id, std::int64_t n, bool, bool) { tokens[id] += n; },
        [this](const RequestTiming& t) { done[t.id] = t; }, o.over_network ? &network : nullptr);
  }
  Rig(const std::string& policy, bool fetch = true, bool over_network = false)
      : Rig(options([&](RigOptions& o) {
          o.policy = policy;
          o.fetch = fetch;
          o.over_network = over_network;
        })) {}

  // Event log lines that contain every one of `parts`.
  int log_lines_with(std::initializer_list<std::string> parts) {
    int n = 0;
    for (const auto& line : rt.log().lines()) {
      bool all = true;
      for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
      n += all ? 1 : 0;
    }
    return n;
  }

  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster;
  fabric::FabricRdma rdma;
  fabric::HostNetwork network;
  ModelProfile model;
  std::unique_ptr<PdSystem> system;
  std::map<RequestId, std::int64_t> tokens;
  std::map<RequestId, RequestTiming> done;
};

// Every KV block any GPU of the deployment holds for a request, and every request, is gone (none once all
// are over).
inline void expect_kv_returned(Rig& rig) {
  for (std::int32_t r = 0; r < rig.system->ranks(); ++r) {
    EXPECT_EQ(rig.system->kv(r).gpu().used_blocks(), 0) << "rank " << r;
    EXPECT_EQ(rig.system->scheduler(r).receiving(), 0u) << "rank " << r;
  }
  EXPECT_EQ(rig.system->prefill(0).scheduler().held(), 0u);
  EXPECT_EQ(rig.system->prefill(0).kv().gpu().used_blocks(), 0);
  EXPECT_EQ(rig.system->in_flight(), 0u);
}

}  // namespace nvl::engine::pd_test
