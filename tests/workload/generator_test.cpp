// The synthetic coding-agent generator lands within the profile's tolerance (5%) of every published
// figure of REFERENCE.md §4 at the published size (610 trials), and is a pure function of its seed.
#include <gtest/gtest.h>

#include "emu/workload/coding_agent_generator.h"
#include "emu/workload/figure_check.h"
#include "emu/workload/trace_stats.h"

namespace nvl::emu {
namespace generator_test {

constexpr std::int64_t kPublishedTrials = 610;

TEST(CodingAgentGenerator, MatchesEveryPublishedFigureAtTheDefaultSeed) {
  // What `nvl72emu trace stats gen:codex` runs: 610 trials, seed 1.
  const CodingAgentGenerator gen(CodingAgentProfile::builtin_codex());
  EXPECT_EQ(gen.profile().default_trials, kPublishedTrials);
  EXPECT_DOUBLE_EQ(gen.profile().tolerance, 0.05);
  const auto st = TraceStats::compute(gen.generate(kPublishedTrials, 1));
  const auto checks = FigureCheck::run(st, gen.profile().targets, gen.profile().tolerance);
  EXPECT_GE(checks.size(), 42u);
  for (const auto& c : checks) {
    EXPECT_FALSE(c.missing) << c.target.figure;
    EXPECT_TRUE(c.within) << c.target.figure << " published " << c.target.published << " generated " << c.generated;
  }
}

TEST(CodingAgentGenerator, OtherSeedsStayClose) {
  // Two published pairs pull against each other (mean context 63K vs 68,329; under-357 share 50% vs computed
  // p50 758), so some figures sit near the 5% edge and another seed's sampling noise can cross it: other
  // seeds must stay within twice the tolerance.
  const CodingAgentGenerator gen(CodingAgentProfile::builtin_codex());
  for (const std::uint64_t seed : {2, 3, 4, 5}) {
    const auto st = TraceStats::compute(gen.generate(kPublishedTrials, seed));
    for (const auto& c : FigureCheck::run(st, gen.profile().targets, 2 * gen.profile().tolerance)) {
      EXPECT_TRUE(c.within) << "seed " << seed << ": " << c.target.figure << " published " << c.target.published
                            << " generated " << c.generated;
    }
  }
}

bool same(const Workload& a, const Workload& b) {
  if (a.sessions.size() != b.sessions.size()) return false;
  for (std::size_t s = 0; s < a.sessions.size(); ++s) {
    const auto& x = a.sessions[s].requests;
    const auto& y = b.sessions[s].requests;
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].prompt_tokens != y[i].prompt_tokens || x[i].output_tokens != y[i].output_tokens ||
          x[i].think_time != y[i].think_time || x[i].offset != y[i].offset ||
          !std::equal(x[i].block_hashes.ids().begin(), x[i].block_hashes.ids().end(),
                      y[i].block_hashes.ids().begin(), y[i].block_hashes.ids().end())) {
        return false;
      }
    }
  }
  return true;
}

TEST(CodingAgentGenerator, SameSeedSameTrialsOtherSeedOtherTrials) {
  const CodingAgentGenerator gen(CodingAgentProfile::builtin_codex());
  EXPECT_TRUE(same(gen.generate(50, 7), gen.generate(50, 7)));
  EXPECT_FALSE(same(gen.generate(50, 7), gen.generate(50, 8)));
}

TEST(CodingAgentGenerator, TrialsShareTheSystemPrefixButNotTheirOwnBlocks) {
  const CodingAgentGenerator gen(CodingAgentProfile::builtin_codex());
  const Workload w = gen.generate(20, 3);
  const auto& p = gen.profile();
  const auto prefix_blocks = static_cast<std::size_t>(p.system_prefix_tokens / p.block_size_tokens);
  std::size_t sharing = 0;
  for (std::size_t s = 1; s < w.sessions.size(); ++s) {
    const auto a = w.sessions[0].requests[0].block_hashes.ids();
    const auto b = w.sessions[s].requests[0].block_hashes.ids();
    ASSERT_GT(a.size(), prefix_blocks);
    ASSERT_GT(b.size(), prefix_blocks);
    if (a[0] == b[0]) {
      ++sharing;
      EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(prefix_blocks), b.begin()));
    }
    EXPECT_NE(a[prefix_blocks], b[prefix_blocks]);  // the task differs
  }
  EXPECT_GT(sharing, 10u);
  for (const auto& s : w.sessions) {
    for (const auto& r : s.requests) {
      EXPECT_LE(r.prompt_tokens, p.context_window_tokens);
      EXPECT_EQ(static_cast<std::int64_t>(r.block_hashes.size()), r.prompt_tokens / p.block_size_tokens);
    }
  }
}

// context_scale=F multiplies every prompt-side token count and leaves outputs alone, so a call's prompt is
// F x (what the trial read) + the answers before it. Hand estimate of the mean prompt at F = 4 from the
// unscaled run: 4 x mean - 3 x (mean of the outputs before each call). Compaction at the (scaled) window and
// rewrites that cut into answers move it a little: within 5%.
TEST(CodingAgentGenerator, ScaledContextsGrowByTheFactorBesideTheAnswers) {
  const CodingAgentProfile base = CodingAgentProfile::builtin_codex();
  const Workload one = CodingAgentGenerator(base).generate(200, 1);
  const Workload four = CodingAgentGenerator(base.with_contexts_scaled(4)).generate(200, 1);
  double prompt_one = 0, prompt_four = 0, answers_before = 0, calls = 0;
  ASSERT_EQ(one.sessions.size(), four.sessions.size());
  for (std::size_t s = 0; s < one.sessions.size(); ++s) {
    const auto& a = one.sessions[s].requests;
    const auto& b = four.sessions[s].requests;
    ASSERT_EQ(a.size(), b.size()) << "calls per trial do not scale";
    double answered = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].output_tokens, b[i].output_tokens) << "answers do not scale";
      prompt_one += static_cast<double>(a[i].prompt_tokens);
      prompt_four += static_cast<double>(b[i].prompt_tokens);
      answers_before += answered;
      answered += static_cast<double>(a[i].output_tokens);
      ++calls;
    }
  }
  const double estimate = 4 * prompt_one / calls - 3 * answers_before / calls;
  EXPECT_NEAR(prompt_four / calls / estimate, 1.0, 0.05)
      << "mean prompt " << prompt_four / calls << " against " << estimate << " (unscaled " << prompt_one / calls << ")";
  EXPECT_TRUE(base.with_contexts_scaled(4).targets.empty()) << "the published figures describe the unscaled trace";
}

}  // namespace generator_test
}  // namespace nvl::emu
