// The real traces in ../shared/traces load as they are and give their published statistics
// (../shared/traces/README.md). CI has the folder: when it is missing these tests fail, they do not skip.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "emu/workload/azure_trace.h"
#include "emu/workload/claude_code_trace.h"
#include "emu/workload/mooncake_trace.h"
#include "emu/workload/trace_stats.h"

namespace nvl::emu {
namespace real_traces_test {

const std::filesystem::path kTraces = NVL_TRACES_DIR;

std::filesystem::path trace(const std::string& rel) {
  const auto p = kTraces / rel;
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << "real trace missing: " << p << " (expected ../shared/traces next to the repository)";
  }
  return p;
}

TEST(RealTraces, MooncakeMatchesItsReadme) {
  const auto path = trace("mooncake/conversation_trace.jsonl");
  ASSERT_TRUE(std::filesystem::exists(path));
  const Workload w = load_mooncake_trace(path);
  const auto st = TraceStats::compute(w);
  EXPECT_EQ(st.figure("requests"), 12031);
  // README: input mean 12,035 / p50 6,909 / p99 85,400; output mean 343 / p50 350 (rounded figures).
  EXPECT_NEAR(st.figure("input.mean"), 12035, 1);
  EXPECT_NEAR(st.figure("input.p50"), 6909, 1);
  EXPECT_NEAR(st.figure("input.p99"), 85400, 100);
  EXPECT_NEAR(st.figure("output.mean"), 343, 1);
  EXPECT_NEAR(st.figure("output.p50"), 350, 1);
  // "Ideal prefix hit with an unbounded cache 36.6%" is the share of prompt blocks found (token-weighted
  // it is 37.4%, the partial last blocks being shorter).
  EXPECT_NEAR(st.figure("prefix.block_hit_rate"), 0.366, 0.0005);
  // The trace's timeline: 1 hour, 3.4 requests a second.
  const rt::Time last = *w.sessions.back().recorded_start;
  EXPECT_NEAR(12031 / last.since_start().seconds(), 3.4, 0.1);
  EXPECT_EQ(w.sessions.front().block_size_tokens, 512);
}

TEST(RealTraces, AzureMatchesItsReadme) {
  const auto path = trace("azure/AzureLLMInferenceTrace_code.csv");
  ASSERT_TRUE(std::filesystem::exists(path));
  const Workload w = load_azure_trace(path);
  const auto st = TraceStats::compute(w);
  EXPECT_EQ(st.figure("requests"), 8819);
  // README: input mean 2,048 / p50 1,469; output mean 28 / p50 13.
  EXPECT_NEAR(st.figure("input.mean"), 2048, 1);
  EXPECT_NEAR(st.figure("input.p50"), 1469, 1);
  EXPECT_NEAR(st.figure("output.mean"), 28, 1);
  EXPECT_NEAR(st.figure("output.p50"), 13, 1);
  EXPECT_EQ(st.figure("prefix.hit_rate"), 0);  // no prefix information: unique hashes, nothing shared
  const rt::Time last = *w.sessions.back().recorded_start;
  EXPECT_NEAR(8819 / last.since_start().seconds(), 2.6, 0.1);  // 1 hour at 2.6 requests a second
}

TEST(RealTraces, ClaudeCodeLoadsWithSubagentsAndNamespaces) {
  const auto path = trace("claude-code/traces");
  ASSERT_TRUE(std::filesystem::exists(path));
  const Workload w = load_claude_code_trace(path);
  const auto st = TraceStats::compute(w);
  // 100 files here, one with 5 sub-agents.
  EXPECT_EQ(st.figure("sessions"), 105);
  EXPECT_EQ(st.figure("subagent_sessions"), 5);
  EXPECT_EQ(st.figure("requests"), 7012);
  for (const auto& s : w.sessions) {
    EXPECT_EQ(s.block_size_tokens, 64);
    for (const auto& r : s.requests) {
      // Full 64-token blocks only.
      EXPECT_EQ(static_cast<std::int64_t>(r.block_hashes.size()), r.prompt_tokens / 64);
    }
  }
  // The README's figures are for all 739 conversations and only 100 are here: loose bounds around them
  // (input mean 122K, output mean 440 / p50 216, ideal prefix hit within a conversation 96.4%).
  EXPECT_GT(st.figure("input.mean"), 0.7 * 122000);
  EXPECT_LT(st.figure("input.mean"), 1.3 * 122000);
  EXPECT_NEAR(st.figure("output.p50"), 216, 40);
  EXPECT_NEAR(st.figure("prefix.hit_rate"), 0.964, 0.02);
  // Ids restart in every file: no first call of a conversation finds another file's blocks. The only
  // cached first calls are sub-agents sharing their system prompt within one file.
  EXPECT_EQ(st.figure("first_call.cached_share"), 4.0 / 105);
}

}  // namespace real_traces_test
}  // namespace nvl::emu
