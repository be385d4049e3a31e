// TraceStats on small hand-made workloads whose cached and computed tokens are known.
#include <gtest/gtest.h>

#include "emu/workload/hash_chain_builder.h"
#include "emu/workload/trace_stats.h"

namespace nvl::emu {
namespace trace_stats_test {

Request request(HashChainBuilder& b, std::vector<std::uint64_t> ids, std::int64_t prompt, std::int64_t output,
                std::int64_t offset_s) {
  Request r;
  r.block_hashes = b.assign(ids);
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  r.offset = rt::sec(offset_s);
  return r;
}

// One conversation in blocks of 10 tokens: 25 tokens, then 25 + 10 answer + 17 new = 52, then a rewrite.
Workload conversation() {
  Workload w;
  w.source = "hand-made";
  Session s;
  s.block_size_tokens = 10;
  HashChainBuilder b;
  s.requests.push_back(request(b, {1, 2}, 25, 10, 0));
  s.requests.push_back(request(b, {1, 2, 3, 4, 5}, 52, 4, 5));
  s.requests.push_back(request(b, {1, 9, 10, 11, 12}, 58, 1, 12));
  w.sessions.push_back(std::move(s));
  return w;
}

TEST(TraceStats, PrefixViewCountsPromptBlocksOnly) {
  const auto st = TraceStats::compute(conversation());
  // Request 2 finds blocks 1, 2 (20 tokens); request 3 finds block 1 (10 tokens).
  EXPECT_DOUBLE_EQ(st.figure("prefix.computed.mean"), (25.0 + 32 + 48) / 3);
  EXPECT_DOUBLE_EQ(st.figure("prefix.hit_rate"), 30.0 / (25 + 52 + 58));
  EXPECT_DOUBLE_EQ(st.figure("prefix.block_hit_rate"), 3.0 / 12);
}

TEST(TraceStats, DecodedViewAlsoHoldsTheAnswer) {
  const auto st = TraceStats::compute(conversation());
  // Request 2 continues request 1: tokens up to 25 + 10 = 35 were held, so blocks 3 (ends at 30) is too.
  // Request 3 rewrites from block 2: no credit, 10 cached tokens.
  EXPECT_DOUBLE_EQ(st.figure("decoded.computed.mean"), (25.0 + 22 + 48) / 3);
  EXPECT_DOUBLE_EQ(st.figure("decoded.prefill_share_under_357"), 1.0);
  EXPECT_DOUBLE_EQ(st.figure("decoded.prefill_share_under_2048"), 1.0);
}

TEST(TraceStats, ConversationFigures) {
  const auto st = TraceStats::compute(conversation());
  EXPECT_DOUBLE_EQ(st.figure("calls_per_session.mean"), 3);
  EXPECT_DOUBLE_EQ(st.figure("growth.mean"), (27.0 + 6) / 2);
  EXPECT_DOUBLE_EQ(st.figure("growth.turns_2_5.mean"), (27.0 + 6) / 2);
  EXPECT_DOUBLE_EQ(st.figure("inter_call_delay_s.mean"), 6);
  EXPECT_DOUBLE_EQ(st.figure("first_call.input.mean"), 25);
  EXPECT_DOUBLE_EQ(st.figure("last_call.input.mean"), 58);
  EXPECT_DOUBLE_EQ(st.figure("session_duration_s.mean"), 12);
  EXPECT_THROW(st.figure("no.such.figure"), std::out_of_range);
}

TEST(TraceStats, SessionsShareBlocksInArrivalOrder) {
  Workload w;
  for (int i = 0; i < 2; ++i) {
    Session s;
    s.block_size_tokens = 10;
    s.recorded_start = rt::Time::zero() + rt::sec(1 - i);  // the second session arrives first
    HashChainBuilder b;
    s.requests.push_back(request(b, {7, static_cast<std::uint64_t>(100 + i)}, 20, 1, 0));
    w.sessions.push_back(std::move(s));
  }
  const auto st = TraceStats::compute(w);
  EXPECT_DOUBLE_EQ(st.figure("prefix.cached.mean"), 5);  // one of the two finds block 7
  EXPECT_EQ(st.figures().count("growth.mean"), 0u);   // no conversation figures for one-request sessions
}

TEST(TraceStats, PercentilesInterpolate) {
  Workload w;
  for (int i = 1; i <= 101; ++i) {
    Session s;
    s.block_size_tokens = 10;
    Request r;
    r.prompt_tokens = i;
    r.output_tokens = i;
    s.requests.push_back(r);
    w.sessions.push_back(std::move(s));
  }
  const auto st = TraceStats::compute(w);
  EXPECT_DOUBLE_EQ(st.figure("output.p50"), 51);
  EXPECT_DOUBLE_EQ(st.figure("output.p90"), 91);
  EXPECT_DOUBLE_EQ(st.figure("output.p99"), 100);
  EXPECT_DOUBLE_EQ(st.figure("output.mean"), 51);
}

}  // namespace trace_stats_test
}  // namespace nvl::emu
