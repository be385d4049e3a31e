#include "emu/live/stop_matcher.h"

#include <gtest/gtest.h>

namespace nvl::emu::live {
namespace stop_matcher_test {

TEST(StopMatcher, CutsBeforeTheFirstStopEvenAcrossPieces) {
  StopMatcher m({"END", "xyz"});
  // "EN" could start "END": held back until the next piece decides.
  EXPECT_EQ(m.feed("abc EN"), "abc ");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.feed("D more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.feed("later"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, TheEarliestOfSeveralWins) {
  StopMatcher m({"two", "one"});
  EXPECT_EQ(m.feed("zero one two"), "zero ");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, WithoutAMatchEverythingComesOutByTheEnd) {
  StopMatcher m({"STOP"});
  std::string out = m.feed("all ");
  out += m.feed("of it, ST");
  EXPECT_EQ(out, "all of it,") << "the last three bytes, \" ST\", could start STOP";
  out += m.flush();
  EXPECT_EQ(out, "all of it, ST");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, NoStopsHoldsNothingBack) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("a b "), "a b ");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace stop_matcher_test
}  // namespace nvl::emu::live
