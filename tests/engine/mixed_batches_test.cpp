// SGLang's default scheduling (no --enable-mixed-chunk) against mixed steps, on one GLM-5 rank: a long prompt
// arriving while another request decodes. Without mixed batches its chunks run alone, prefill first, so the
// decoding request gets no token until the prompt is prefilled, and the prompt's first token comes one
// step sooner: mixed steps need a third step for the two tokens the decode took from the budget.
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/normal_worker_group.h"
#include "tests/engine/test_request.h"

namespace nvl::engine {
namespace mixed_batches_test {

using test::request;

struct LongPromptArrives {
  double decode_step_ms = 0;      // request 1's token gap before the prompt arrives
  double prompt_ttft_ms = 0;      // request 2's, from its arrival
  int tokens_during_prefill = 0;  // request 1's tokens between request 2's arrival and its first token
};

// Request 1 (1,000 tokens, 60 out) decodes alone; at its 20th token request 2 (16,384 tokens, 4 out)
// arrives on the same rank, with the default budget and chunk of 8,192 tokens.
LongPromptArrives run(bool mixed_batches) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.activation_reserve_bytes = 20'000'000'000;
  cfg.scheduler.mixed_batches = mixed_batches;
  std::vector<rt::Time> tokens_of_1;
  rt::Time arrived, first_of_2;
  NormalWorkerGroup* group_ptr = nullptr;
  NormalWorkerGroup group(
      rt, model, cluster.devices(0, 8), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) {
        if (o.id == 2 && o.first_token) first_of_2 = rt.now();
        if (o.id != 1) return;
        tokens_of_1.push_back(rt.now());
        if (tokens_of_1.size() == 20) {
          arrived = rt.now();
          group_ptr->submit(0, request(2, 16'384, 4));
        }
      },
      [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  group_ptr = &group;
  group.start();
  group.submit(0, request(1, 1'000, 60));
  rt.run();
  LongPromptArrives out;
  out.decode_step_ms = (tokens_of_1[19] - tokens_of_1[9]).seconds() * 1e3 / 10;
  out.prompt_ttft_ms = (first_of_2 - arrived).seconds() * 1e3;
  for (const rt::Time t : tokens_of_1) out.tokens_during_prefill += t > arrived && t <= first_of_2 ? 1 : 0;
  return out;
}

TEST(MixedBatches, WithoutThemAPromptsChunksRunAloneAndItsFirstTokenComesAStepSooner) {
  const LongPromptArrives mixed = run(true);
  const LongPromptArrives alone = run(false);
  // Mixed: chunks of 8,191 + 8,191 + 2 beside request 1's decode, which delivers a token in each of the
  // three steps. Prefill first: two chunks of 8,192 with no decode, then request 1 goes on.
  EXPECT_EQ(mixed.tokens_during_prefill, 3);
  EXPECT_EQ(alone.tokens_during_prefill, 0);
  // Hand estimate: the two long chunks cost the same either way (one decode token more or less in 8,192);
  // mixed steps add the third step, about one decode step of request 1 (2 prompt tokens beside it), and
  // the step that was running when the prompt arrived, which both wait for.
  const double saved_ms = mixed.prompt_ttft_ms - alone.prompt_ttft_ms;
  EXPECT_GT(saved_ms, 0.5 * mixed.decode_step_ms);
  EXPECT_LT(saved_ms, 2.0 * mixed.decode_step_ms);
  EXPECT_NEAR(mixed.decode_step_ms, alone.decode_step_ms, 1e-9);  // the same steps before the prompt
}

}  // namespace mixed_batches_test
}  // namespace nvl::engine
