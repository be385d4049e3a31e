#include "emu/rt/time.h"

#include <gtest/gtest.h>

namespace nvl::rt {
namespace time_test {

using namespace literals;

TEST(Time, HelpersAndLiteralsAgree) {
  EXPECT_EQ(us(5).ns(), 5'000);
  EXPECT_EQ(ms(2), 2'000_us);
  EXPECT_EQ(sec(1), 1000_ms);
  EXPECT_EQ(7_ns, ns(7));
  EXPECT_EQ((Time::zero() + ms(3)) - Time::zero(), 3_ms);
  EXPECT_LT(Time::zero() + 1_ns, Time::zero() + 2_ns);
}

TEST(Time, PrintsHumanUnits) {
  EXPECT_EQ(to_string(250_ns), "250 ns");
  EXPECT_EQ(to_string(ns(12'500)), "12.5 us");
  EXPECT_EQ(to_string(us(3'250)), "3.25 ms");
  EXPECT_EQ(to_string(ms(1'500)), "1.5 s");
  EXPECT_EQ(to_string(-ms(2)), "-2 ms");
  EXPECT_EQ(to_string(Time::zero() + sec(12) + ns(345'678)), "12.000345678");
  EXPECT_EQ(to_string(Time::zero() - ns(1)), "-0.000000001");
}

TEST(Time, FromSecondsRoundsAndRejectsNonsense) {
  EXPECT_EQ(from_seconds(1.5e-6), ns(1'500));
  EXPECT_EQ(from_seconds(2.0), sec(2));
  EXPECT_THROW(from_seconds(1e300), std::invalid_argument);
  EXPECT_THROW(from_seconds(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
}

}  // namespace time_test
}  // namespace nvl::rt
