#pragma once
// The mean decode step of a normal worker group whose every DP rank holds a full batch: `batch` requests
// per rank (per GPU without attention TP) of `prompt` tokens, EP over all the GPUs, over the steps in
// which every request decodes (from the last first token to the first request's end).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/model/weight_footprint.h"
#include "engine/worker/normal_worker_group.h"

namespace nvl::engine::test {

struct FullBatchDecode {
  std::string gpu = "h100";
  std::string fabric = "hgx-h100";
  std::string model = "deepseek-v3";
  int gpus = 16;
  int units = 2;  // nodes (or racks) the GPUs spread over
  std::int64_t batch = 64;
  std::int64_t prompt = 500;
  emu::FabricMode mode = emu::FabricMode::fast;
  std::function<void(NormalGroupConfig&)> configure = [](NormalGroupConfig&) {};
};

struct DecodeSteps {
  double step_ms = 0;
  WeightFootprint weights;  // per GPU
};

inline DecodeSteps decode_steps(const FullBatchDecode& s) {
  constexpr std::int64_t kBudget = 16'384;
  constexpr std::int64_t kFullSteps = 8;
  // Prefill takes about this many steps; the first requests decode during them.
  const std::int64_t prefill_steps = (s.batch * s.prompt + kBudget - 1) / kBudget;
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, s.gpu, s.fabric, s.gpus, s.units, s.mode);
  const ModelProfile model = load_model_profile(model_profile_path(s.model));
  NormalGroupConfig cfg;
  cfg.kv_dtype = hal::DType::bf16;
  cfg.scheduler.max_running = s.batch;
  cfg.scheduler.token_budget = kBudget;
  s.configure(cfg);
  const std::int64_t ranks = s.gpus / cfg.attention_tp;
  const std::int64_t everyone = s.batch * ranks;
  std::int64_t first = 0;
  std::uint64_t steps_before = 0, steps_after = 0;
  rt::Time decode_start, decode_end;
  std::unique_ptr<NormalWorkerGroup> group;
  group = std::make_unique<NormalWorkerGroup>(
      rt, model, cluster.devices(0, s.gpus), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) {
        if (o.first_token && ++first == everyone) {
          decode_start = rt.now();
          steps_before = group->steps();
        }
        if (o.finished && first == everyone && steps_after == 0) {
          decode_end = rt.now();
          steps_after = group->steps();
        }
      },
      [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  group->start();
  RequestId id = 1;
  for (std::int32_t r = 0; r < ranks; ++r) {
    for (std::int64_t b = 0; b < s.batch; ++b) {
      RequestState q;
      q.id = id++;
      q.prompt_tokens = s.prompt;
      q.max_output_tokens = 3 * prefill_steps + kFullSteps;
      group->submit(r, std::move(q));
    }
  }
  rt.run();
  EXPECT_EQ(first, everyone);
  const auto full_steps = static_cast<double>(steps_after - steps_before);
  EXPECT_GE(full_steps, kFullSteps);
  return {(decode_end - decode_start).seconds() * 1e3 / full_steps, group->weights()};
}

}  // namespace nvl::engine::test
