#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sched/rank_scheduler.h"

namespace nvl::engine {
namespace rank_scheduler_test {

KvCacheManager make_kv(std::int64_t blocks, std::int64_t block_tokens = 4) {
  return KvCacheManager(KvCacheConfig{.rank = 0, .gpu_blocks = blocks, .block_tokens = block_tokens, .block_bytes = 1});
}

RequestState request(RequestId id, std::int64_t prompt, std::int64_t output) {
  RequestState r;
  r.id = id;
  r.prompt_tokens = prompt;
  r.max_output_tokens = output;
  for (std::int64_t b = 0; b < prompt / 4; ++b) r.prompt_hashes.push_back(id * 100 + static_cast<BlockHash>(b));
  return r;
}

std::int64_t no_drafts(RequestId) { return 0; }

// Runs steps until idle; returns the tokens delivered per request and the number of steps.
std::pair<std::map<RequestId, std::int64_t>, int> drain(RankScheduler& s,
                                                        const std::function<std::int64_t(RequestId)>& accepted = no_drafts) {
  std::map<RequestId, std::int64_t> delivered;
  int steps = 0;
  while (!s.idle()) {
    const StepPlan plan = s.plan_step();
    if (plan.empty()) ADD_FAILURE() << "scheduler stalled with work left";
    if (plan.empty()) break;
    for (const auto& o : s.complete_step(plan, accepted)) delivered[o.id] += o.new_output_tokens;
    ++steps;
  }
  return {delivered, steps};
}

TEST(RankScheduler, PrefillThenDecodeUntilTheOutputIsDone) {
  auto kv = make_kv(16);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 10, 3));
  StepPlan p = s.plan_step();
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_FALSE(p.items[0].decode);
  EXPECT_EQ(p.items[0].new_tokens, 10);
  EXPECT_TRUE(p.items[0].last_chunk);
  auto o = s.complete_step(p, no_drafts);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].first_token);
  p = s.plan_step();
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_TRUE(p.items[0].decode);
  EXPECT_EQ(p.items[0].context_tokens, 10);
  s.complete_step(p, no_drafts);
  p = s.plan_step();
  EXPECT_EQ(p.items[0].context_tokens, 11);
  o = s.complete_step(p, no_drafts);
  EXPECT_TRUE(o[0].finished);
  EXPECT_TRUE(s.idle());
  EXPECT_EQ(kv.gpu().used_blocks(), 0);
}

TEST(RankScheduler, LongPromptsArePrefilledInChunks) {
  auto kv = make_kv(16);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100, .chunk_tokens = 8}, nullptr);
  s.enqueue(request(1, 20, 1));
  std::vector<std::int64_t> chunks;
  while (!s.idle()) {
    const StepPlan p = s.plan_step();
    chunks.push_back(p.items.at(0).new_tokens);
    s.complete_step(p, no_drafts);
  }
  EXPECT_EQ(chunks, (std::vector<std::int64_t>{8, 8, 4}));
}

TEST(RankScheduler, DecodesComeFirstAndPrefillGetsTheRestOfTheBudget) {
  auto kv = make_kv(64);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 10}, nullptr);
  for (RequestId id = 1; id <= 3; ++id) s.enqueue(request(id, 3, 5));
  s.complete_step(s.plan_step(), no_drafts);  // three 3-token prefills fit in 10
  s.enqueue(request(4, 40, 2));
  const StepPlan p = s.plan_step();
  EXPECT_EQ(p.decode_tokens, 3);
  EXPECT_EQ(p.prefill_tokens, 7);
}

TEST(RankScheduler, WithoutMixedBatchesAStepPrefillsFirstAndTheDecodesWaitForIt) {
  auto kv = make_kv(64);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 10, .mixed_batches = false}, nullptr);
  for (RequestId id = 1; id <= 3; ++id) s.enqueue(request(id, 3, 5));
  s.complete_step(s.plan_step(), no_drafts);  // three 3-token prefills fit in 10
  s.enqueue(request(4, 16, 2));
  // SGLang without --enable-mixed-chunk: the new prompt's chunks run alone, with the whole budget, until
  // it is prefilled; the three running requests decode in neither step.
  for (const std::int64_t chunk : {10, 6}) {
    const StepPlan p = s.plan_step();
    EXPECT_EQ(p.decode_tokens, 0);
    EXPECT_EQ(p.prefill_tokens, chunk);
    s.complete_step(p, no_drafts);
  }
  const StepPlan p = s.plan_step();
  EXPECT_EQ(p.decode_tokens, 4);
  EXPECT_EQ(p.prefill_tokens, 0);
  // The rest drains: request 4's second token was its last, the others have three left.
  s.complete_step(p, no_drafts);
  const auto [delivered, steps] = drain(s);
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(delivered.count(4), 0u);
}

TEST(RankScheduler, RunningCapHoldsRequestsInTheQueue) {
  auto kv = make_kv(64);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100, .max_running = 2}, nullptr);
  for (RequestId id = 1; id <= 3; ++id) s.enqueue(request(id, 4, 3));
  s.plan_step();
  EXPECT_EQ(s.running(), 2u);
  EXPECT_EQ(s.waiting(), 1u);
}

TEST(RankScheduler, AdmissionWaitsForFreeKvBlocks) {
  auto kv = make_kv(4);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 12, 2));  // 3 blocks, then a 4th for its second token
  s.enqueue(request(2, 8, 1));   // 2 blocks: must wait for the first
  StepPlan p = s.plan_step();
  EXPECT_EQ(p.items.size(), 1u);
  EXPECT_EQ(s.waiting(), 1u);
  const auto [delivered, steps] = drain(s);
  EXPECT_EQ(delivered.at(1), 2);
  EXPECT_EQ(delivered.at(2), 1);
}

TEST(RankScheduler, PreemptionRecomputesAndDeliversEveryTokenOnce) {
  auto kv = make_kv(6);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 8, 9));  // grows to 16 tokens: 4 blocks
  s.enqueue(request(2, 8, 9));  // together they need 8 blocks of 6
  int preemptions = 0;
  std::map<RequestId, std::int64_t> delivered;
  while (!s.idle()) {
    const StepPlan p = s.plan_step();
    ASSERT_FALSE(p.empty());
    preemptions += static_cast<int>(p.preempted.size());
    for (const auto& o : s.complete_step(p, no_drafts)) delivered[o.id] += o.new_output_tokens;
    kv.check_invariants();
  }
  EXPECT_GE(preemptions, 1);
  EXPECT_EQ(s.preemptions(), static_cast<std::uint64_t>(preemptions));  // what vllm:num_preemptions reports
  EXPECT_EQ(delivered.at(1), 9);
  EXPECT_EQ(delivered.at(2), 9);
  EXPECT_EQ(kv.gpu().used_blocks(), 0);
}

// SM partitions: decode and prefill steps planned apart, each while the other's may still run.
TEST(RankScheduler, DecodeAndPrefillStepsArePlannedApartBesideEachOther) {
  auto kv = make_kv(64);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 8, 3));
  EXPECT_TRUE(s.plan_step(StepKind::decode).empty());  // nothing decodes yet
  StepPlan prefill = s.plan_step(StepKind::prefill);
  ASSERT_EQ(prefill.items.size(), 1u);
  s.complete_step(prefill, no_drafts);
  s.enqueue(request(2, 40, 2));
  const StepPlan decode = s.plan_step(StepKind::decode);
  ASSERT_EQ(decode.items.size(), 1u);
  EXPECT_TRUE(decode.items[0].decode);
  EXPECT_EQ(decode.items[0].id, 1u);
  EXPECT_EQ(decode.prefill_tokens, 0);
  // Planned while the decode step runs: the new prompt, and not the decode again.
  prefill = s.plan_step(StepKind::prefill);
  ASSERT_EQ(prefill.items.size(), 1u);
  EXPECT_EQ(prefill.items[0].id, 2u);
  EXPECT_EQ(prefill.items[0].new_tokens, 40);
  EXPECT_EQ(prefill.decode_tokens, 0);
  std::map<RequestId, std::int64_t> delivered;
  for (const auto& o : s.complete_step(prefill, no_drafts)) delivered[o.id] += o.new_output_tokens;
  for (const auto& o : s.complete_step(decode, no_drafts)) delivered[o.id] += o.new_output_tokens;
  EXPECT_EQ(delivered[1], 1);
  EXPECT_EQ(delivered[2], 1);
  EXPECT_EQ(s.plan_step(StepKind::decode).items.size(), 2u);  // both decode now
}

TEST(RankScheduler, ADecodeStepNeverPreemptsARequestInThePrefillStep) {
  auto kv = make_kv(6);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 8, 9));
  s.complete_step(s.plan_step(StepKind::prefill), no_drafts);
  // Request 2's prompt takes the four blocks left; request 1's next token needs a third block.
  s.enqueue(request(2, 16, 2));
  const StepPlan prefill = s.plan_step(StepKind::prefill);
  ASSERT_EQ(prefill.items.size(), 1u);
  EXPECT_EQ(kv.gpu_available_blocks(), 0);
  // The newest request holds its KV for the chunk on the GPU: request 1 gives way instead.
  const StepPlan decode = s.plan_step(StepKind::decode);
  EXPECT_TRUE(decode.empty());
  EXPECT_EQ(decode.preempted, std::vector<RequestId>{1});
  const auto o = s.complete_step(prefill, no_drafts);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].first_token);
  kv.check_invariants();
  EXPECT_EQ(s.waiting(), 1u);  // request 1, to be recomputed
}

TEST(RankScheduler, MtpDraftsDeliverMoreTokensPerStep) {
  auto kv = make_kv(16);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100, .draft_tokens = 1}, nullptr);
  s.enqueue(request(1, 4, 9));
  const auto [delivered, steps] = drain(s, [](RequestId) { return 1; });
  EXPECT_EQ(delivered.at(1), 9);
  EXPECT_EQ(steps, 1 + 4);  // prefill, then 2 tokens per decode step
}

TEST(RankScheduler, CancelFreesTheRequestsKv) {
  auto kv = make_kv(8);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 12, 20));  // 32 tokens at most: the whole 8-block cache
  s.complete_step(s.plan_step(), no_drafts);
  EXPECT_GT(kv.gpu().used_blocks(), 0);
  EXPECT_TRUE(s.cancel(1));
  EXPECT_FALSE(s.cancel(1));
  EXPECT_EQ(kv.gpu().used_blocks(), 0);
  EXPECT_TRUE(s.idle());
}

TEST(RankScheduler, ACancelDuringAStepTakesEffectWhenTheStepCompletes) {
  auto kv = make_kv(8);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 12, 5));
  s.enqueue(request(2, 4, 5));
  const StepPlan p = s.plan_step();
  EXPECT_TRUE(s.cancel(1));  // its prefill is "on the GPU"
  EXPECT_GT(kv.gpu().used_blocks(), 0);
  const auto out = s.complete_step(p, no_drafts);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, 2u);
  EXPECT_FALSE(s.find(1));
  EXPECT_FALSE(s.cancel(1));
  const auto [delivered, steps] = drain(s);
  EXPECT_EQ(delivered.at(2) + 1, 5);
  EXPECT_EQ(kv.gpu().used_blocks(), 0);
}

TEST(RankScheduler, ShortestPrefillFirstAdmitsTheShortPrompt) {
  auto kv = make_kv(64);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 5}, make_scheduling_policy("shortest_prefill_first"));
  s.enqueue(request(1, 40, 1));
  s.enqueue(request(2, 4, 1));
  const StepPlan p = s.plan_step();
  EXPECT_EQ(p.items.at(0).id, 2u);
  EXPECT_THROW(make_scheduling_policy("lottery"), std::invalid_argument);
}

TEST(RankScheduler, APromptLargerThanTheWholeCacheIsRejectedNotStalled) {
  auto kv = make_kv(4);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 40, 1));
  s.enqueue(request(2, 4, 1));
  const StepPlan p = s.plan_step();
  EXPECT_EQ(p.rejected, std::vector<RequestId>{1});
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].id, 2u);
}

TEST(RankScheduler, ReceivedKvJoinsDecodeWithItsFirstTokenDelivered) {
  auto kv = make_kv(16);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  const auto plan = s.receive(request(1, 12, 4));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->compute_tokens, 13);  // nothing cached here: the whole prompt arrives (+ the next token's slot)
  EXPECT_EQ(kv.gpu().used_blocks(), 4);
  EXPECT_TRUE(s.plan_step().empty()) << "a receiving request is not scheduled";
  EXPECT_FALSE(s.idle());
  const StepOutcome first = s.received(1);
  EXPECT_TRUE(first.first_token);
  EXPECT_EQ(first.new_output_tokens, 1);
  const StepPlan p = s.plan_step();
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_TRUE(p.items[0].decode);
  EXPECT_EQ(p.items[0].context_tokens, 12);
  const auto [delivered, steps] = drain(s);
  EXPECT_EQ(delivered.at(1) + 1, 4);
  EXPECT_EQ(kv.gpu().used_blocks(), 0);
  // Its prompt blocks were published: a second request with the same prompt finds them.
  EXPECT_EQ(kv.match(request(1, 12, 4).prompt_hashes).gpu_blocks, 3);
}

TEST(RankScheduler, ReceiveWaitsForRoomAndAFailedTransferIsPrefilledHere) {
  auto kv = make_kv(4);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  ASSERT_TRUE(s.receive(request(1, 12, 3)));
  EXPECT_FALSE(s.receive(request(2, 8, 3))) << "no room: nothing taken";
  EXPECT_FALSE(s.find(2));
  s.receive_failed(1);
  const auto [delivered, steps] = drain(s);
  EXPECT_EQ(delivered.at(1), 3) << "re-prefilled locally, every token delivered";
}

TEST(RankScheduler, ARequestWhoseOutputCouldNeverFitIsRejectedUpFront) {
  auto kv = make_kv(8);  // 32 tokens
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 12, 21));  // 33 tokens: it would preempt everyone newer, then itself
  EXPECT_FALSE(s.fits(*s.find(1)));
  const StepPlan p = s.plan_step();
  EXPECT_EQ(p.rejected, std::vector<RequestId>{1});
  EXPECT_TRUE(s.idle());
}

TEST(RankScheduler, AHeldRequestKeepsItsKvAfterItsLastTokenUntilReleased) {
  auto kv = make_kv(8);
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  RequestState r = request(1, 12, 1);
  r.hold_kv_after_finish = true;
  s.enqueue(r);
  const auto out = s.complete_step(s.plan_step(), no_drafts);
  ASSERT_TRUE(out.at(0).finished);
  EXPECT_TRUE(s.idle());
  EXPECT_EQ(s.held(), 1u);
  EXPECT_EQ(kv.gpu().used_blocks(), 3) << "still being read (a KV transfer)";
  EXPECT_TRUE(s.release_held(1));
  EXPECT_FALSE(s.release_held(1));
  EXPECT_EQ(kv.gpu().used_blocks(), 0);
}

TEST(RankScheduler, BadRequestsAndConfigsAreRejected) {
  auto kv = make_kv(8);
  EXPECT_THROW(RankScheduler(kv, SchedulerConfig{.token_budget = 0}, nullptr), std::invalid_argument);
  RankScheduler s(kv, SchedulerConfig{}, nullptr);
  EXPECT_THROW(s.enqueue(request(1, 0, 1)), std::invalid_argument);
  s.enqueue(request(2, 4, 1));
  EXPECT_THROW(s.enqueue(request(2, 4, 1)), std::logic_error);
}

// A request whose prefix only Grace holds is admitted (KV taken, the load asked for) but not scheduled
// until loaded(); the running request decodes meanwhile, and is the one preempted, never the loader.
TEST(RankScheduler, APrefixLoadingFromGraceWaitsForItsLoadWhileOthersDecode) {
  KvCacheManager kv(KvCacheConfig{.rank = 0, .gpu_blocks = 8, .grace_blocks = 16, .block_tokens = 4, .block_bytes = 1,
                                  .grace_policy = GraceTierPolicy::write_through});
  RankScheduler s(kv, SchedulerConfig{.token_budget = 100}, nullptr);
  s.enqueue(request(1, 17, 1));  // 4 full blocks published, written through to Grace
  drain(s);
  kv.drop_gpu_cached();  // HBM lost them; Grace keeps them
  s.enqueue(request(2, 4, 8));
  s.complete_step(s.plan_step(), no_drafts);  // request 2 prefilled
  kv.take_copies();                           // the offloads so far
  RequestState again = request(3, 17, 1);  // request 1's prompt once more
  again.prompt_hashes = request(1, 17, 1).prompt_hashes;
  s.enqueue(again);
  StepPlan p = s.plan_step();
  ASSERT_EQ(p.items.size(), 1u);  // request 2's decode; request 3 admitted and loading
  EXPECT_EQ(p.items[0].id, 2u);
  EXPECT_EQ(s.loading(), 1u);
  const auto copies = kv.take_copies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].direction, KvCopy::Direction::grace_to_gpu);
  EXPECT_EQ(copies[0].request, 3u);
  EXPECT_EQ(copies[0].blocks, 4);
  s.complete_step(p, no_drafts);
  p = s.plan_step();
  ASSERT_EQ(p.items.size(), 1u);  // still loading: only the decode
  s.complete_step(p, no_drafts);
  EXPECT_TRUE(s.loaded(3));
  EXPECT_FALSE(s.loaded(3));
  p = s.plan_step();
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[1].id, 3u);
  EXPECT_EQ(p.items[1].context_tokens, 16);  // the loaded prefix
  EXPECT_EQ(p.items[1].new_tokens, 1);
}

}  // namespace rank_scheduler_test
}  // namespace nvl::engine
