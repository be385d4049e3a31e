// The sweep plan: every combination of the --vary axes and the seeds, in a stable order, and the one-line
// errors for bad --vary / --seeds text.
#include <set>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/sweep/sweep_plan.h"

namespace nvl::emu {
namespace sweep_plan_test {

TEST(SweepPlan, IsTheCartesianProductWithTheSeedVaryingFastest) {
  const auto runs = plan_sweep({parse_vary("a.x=1,2"), parse_vary("b=p,q,r")}, parse_seeds("4..5"));
  ASSERT_EQ(runs.size(), 2u * 3u * 2u);
  EXPECT_EQ(runs[0].overrides(), (std::vector<std::string>{"a.x=1", "b=p", "seed=4"}));
  EXPECT_EQ(runs[1].overrides(), (std::vector<std::string>{"a.x=1", "b=p", "seed=5"}));
  EXPECT_EQ(runs[2].overrides(), (std::vector<std::string>{"a.x=1", "b=q", "seed=4"}));
  EXPECT_EQ(runs.back().overrides(), (std::vector<std::string>{"a.x=2", "b=r", "seed=5"}));
  std::set<std::string> folders;
  for (const auto& r : runs) folders.insert(r.folder_name());
  EXPECT_EQ(folders.size(), runs.size());
}

TEST(SweepPlan, NoAxisIsOneRunPerSeed) {
  EXPECT_EQ(plan_sweep({}, parse_seeds("7")).size(), 1u);
  EXPECT_EQ(plan_sweep({}, parse_seeds("1..10")).size(), 10u);
  // The largest seed ends the range instead of wrapping round to 0.
  EXPECT_EQ(parse_seeds("18446744073709551614..18446744073709551615").size(), 2u);
}

TEST(SweepPlan, FolderNamesAreSafe) {
  SweepPoint p;
  p.settings = {{"workload.source", "/tmp/a b/t.jsonl"}};
  p.seed = 3;
  EXPECT_EQ(p.folder_name(), "workload.source=_tmp_a_b_t.jsonl_seed=3");
}

TEST(SweepPlan, BadTextIsAnInputError) {
  for (const char* v : {"novalue", "=1,2", "k=", "k=1,", "k=,1", "seed=1,2"}) {
    EXPECT_THROW(parse_vary(v), rt::InputError) << v;
  }
  for (const char* s : {"", "x", "1..", "..2", "3..1", "-1", "1...2", "1..2x", "0..99999999999"}) {
    EXPECT_THROW(parse_seeds(s), rt::InputError) << s;
  }
  EXPECT_THROW(plan_sweep({parse_vary("k=1"), parse_vary("k=2")}, {1}), rt::InputError);
  // Runs that would write one folder: a repeated value, or two values made the same by the safe name.
  EXPECT_THROW(plan_sweep({parse_vary("k=1,1")}, {1}), rt::InputError);
  EXPECT_THROW(plan_sweep({parse_vary("k=a/b,a_b")}, {1}), rt::InputError);
}

}  // namespace sweep_plan_test
}  // namespace nvl::emu
