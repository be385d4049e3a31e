// The benchmark workload (bench:...): prompt lengths exactly as asked or inside the spread's bounds, the
// prefix the only shared part, every request's output as asked, and bad specs named by their key.
#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/workload/bench_generator.h"
#include "emu/workload/bench_spec.h"
#include "emu/workload/workload_source.h"

namespace nvl::emu {
namespace bench_workload_test {

Workload open_bench(const std::string& spec, std::size_t requests) {
  LoadOptions o;
  o.max_sessions = requests;
  return open_workload_source(spec, o).workload;
}

TEST(BenchWorkload, EveryPromptHasExactlyTheInputLengthAndNoSharedBlock) {
  const Workload w = open_bench("bench:isl=1024,osl=128", 50);
  ASSERT_EQ(w.sessions.size(), 50u);
  std::set<std::uint64_t> ids;
  std::size_t blocks = 0;
  for (const Session& s : w.sessions) {
    ASSERT_EQ(s.requests.size(), 1u);
    EXPECT_FALSE(s.recorded_start.has_value());
    const Request& r = s.requests.front();
    EXPECT_EQ(r.prompt_tokens, 1024);
    EXPECT_EQ(r.output_tokens, 128);
    EXPECT_EQ(s.block_size_tokens, 64);
    EXPECT_EQ(r.block_hashes.size(), 1024u / 64u);
    ids.insert(r.block_hashes.ids().begin(), r.block_hashes.ids().end());
    blocks += r.block_hashes.size();
  }
  EXPECT_EQ(ids.size(), blocks) << "no two requests share a block";
}

TEST(BenchWorkload, TheSpreadDrawsInsideVllmsRangeAndReachesBothEnds) {
  // isl 1000, spread 0.2: uniform integers in [floor(800), ceil(1200)].
  const Workload w = open_bench("bench:isl=1000,osl=8,isl_spread=0.2", 2000);
  std::int64_t lo = 1'000'000, hi = 0;
  for (const Session& s : w.sessions) {
    lo = std::min(lo, s.requests.front().prompt_tokens);
    hi = std::max(hi, s.requests.front().prompt_tokens);
  }
  EXPECT_GE(lo, 800);
  EXPECT_LE(hi, 1200);
  EXPECT_LT(lo, 810) << "2,000 draws over 401 values come near both ends";
  EXPECT_GT(hi, 1190);
}

TEST(BenchWorkload, TheRangeRoundsOutwardAsVllmDoes) {
  const BenchSpec b = parse_bench_spec("bench:isl=10,osl=1,isl_spread=0.25");
  EXPECT_EQ(b.isl_low(), 7);    // floor(7.5)
  EXPECT_EQ(b.isl_high(), 13);  // ceil(12.5)
  EXPECT_EQ(parse_bench_spec("bench:isl=2,osl=1,isl_spread=0.9").isl_low(), 1) << "never below one token";
}

TEST(BenchWorkload, ThePrefixIsSharedInWholeBlocksAndAddedToTheInput) {
  // 200 prefix tokens + 100 own: 300 tokens in 5 blocks of 64; the first 3 (192 tokens) lie inside the prefix.
  const Workload w = open_bench("bench:isl=100,osl=2,prefix=200", 3);
  for (const Session& s : w.sessions) {
    EXPECT_EQ(s.requests.front().prompt_tokens, 300);
    ASSERT_EQ(s.requests.front().block_hashes.size(), 5u);
  }
  const auto a = w.sessions[0].requests.front().block_hashes.ids();
  const auto b = w.sessions[1].requests.front().block_hashes.ids();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(a[i], b[i]) << "block " << i;
  for (std::size_t i = 3; i < 5; ++i) EXPECT_NE(a[i], b[i]) << "block " << i;
}

TEST(BenchWorkload, TheSeedFixesTheLengths) {
  const auto lengths = [](const std::string& spec) {
    std::vector<std::int64_t> v;
    for (const Session& s : open_bench(spec, 20).sessions) v.push_back(s.requests.front().prompt_tokens);
    return v;
  };
  EXPECT_EQ(lengths("bench:isl=500,osl=1,isl_spread=0.5"), lengths("bench:isl=500,osl=1,isl_spread=0.5"));
  EXPECT_NE(lengths("bench:isl=500,osl=1,isl_spread=0.5"), lengths("bench:isl=500,osl=1,isl_spread=0.5,seed=2"));
}

// Runs `f` and checks that it throws an InputError whose message holds every fragment.
template <typename F>
void expect_input_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected an InputError";
  } catch (const rt::InputError& e) {
    const std::string msg = e.what();
    for (const auto& s : fragments) EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' not in: " << msg;
  }
}

TEST(BenchWorkload, BadSpecsNameTheirKey) {
  expect_input_error([] { parse_bench_spec("bench:isl=8,osl=8,speed=2"); }, {"speed", "unknown parameter"});
  expect_input_error([] { parse_bench_spec("bench:isl=abc,osl=8"); }, {"isl", "'abc'"});
  expect_input_error([] { parse_bench_spec("bench:isl=0,osl=8"); }, {"isl", "from 1"});
  expect_input_error([] { parse_bench_spec("bench:isl=8,osl=0"); }, {"osl", "from 1"});
  expect_input_error([] { parse_bench_spec("bench:isl=8,osl=8,prefix=-1"); }, {"prefix", "'-1'"});
  expect_input_error([] { parse_bench_spec("bench:isl=8,osl=8,isl_spread=1"); }, {"isl_spread", "[0, 1)"});
  expect_input_error([] { parse_bench_spec("bench:isl=8,osl=8,isl_spread=-0.1"); }, {"isl_spread", "[0, 1)"});
  expect_input_error([] { parse_bench_spec("bench:isl=8,osl=8,isl_spread=x"); }, {"isl_spread", "'x'"});
  expect_input_error([] { parse_bench_spec("bench:isl=8"); }, {"osl", "missing"});
  expect_input_error([] { parse_bench_spec("bench:isl=8,osl"); }, {"osl", "key=value"});
  expect_input_error([] { open_workload_source("bench:isl=8,osl=8"); }, {"workload.requests"});
}

}  // namespace bench_workload_test
}  // namespace nvl::emu
