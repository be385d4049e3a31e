// The calibration suite runs only the providers that may give the rows asked for, holds providers to the
// id prefixes they declare, and tells rows known to miss (their note says why) from failures.
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "emu/validate/calibration_suite.h"

namespace nvl::emu {
namespace calibration_suite_test {

CalibrationRow figure(const std::string& id, double emulated, const std::string& note = "") {
  CalibrationRow r = row(id, RowBasis::independent, id, "GB/s", "test", 100, emulated, 10);
  r.note = note;
  return r;
}

TEST(CalibrationSuite, RunsOnlyTheProvidersThatMayGiveTheRowsAskedFor) {
  int a_runs = 0, b_runs = 0;
  CalibrationSuite suite;
  suite.add("fabric", {"a2a_"}, [&] {
    ++a_runs;
    return std::vector<CalibrationRow>{figure("a2a_ep8", 100), figure("a2a_ep16", 100)};
  });
  suite.add("engine", {"v2_"}, [&] {
    ++b_runs;
    return std::vector<CalibrationRow>{figure("v2_decode", 100)};
  });
  EXPECT_EQ(suite.run("a2a_ep16").size(), 1u);
  EXPECT_EQ(suite.run("a2a").size(), 2u);
  EXPECT_EQ(a_runs, 2);
  EXPECT_EQ(b_runs, 0);
  EXPECT_TRUE(suite.run("no_such_row").empty());
  EXPECT_EQ(a_runs + b_runs, 2) << "a prefix no provider declares runs nothing";
  EXPECT_EQ(suite.run("engine").size(), 1u);
  EXPECT_EQ(suite.run("").size(), 3u);
  EXPECT_EQ(b_runs, 2);
}

TEST(CalibrationSuite, ARowOutsideItsProvidersPrefixesIsAProgrammingError) {
  CalibrationSuite suite;
  suite.add("fabric", {"a2a_"}, [] { return std::vector<CalibrationRow>{figure("nccl_x", 100)}; });
  EXPECT_THROW(suite.run(""), std::logic_error);
}

TEST(CalibrationSuite, ARowWithANoteMissesKnowinglyAndOneWithoutFails) {
  const CalibrationRow known = figure("v2", 130, "optimistic: host time not modelled");
  const CalibrationRow failed = figure("v3", 130);
  const CalibrationRow noted_pass = figure("v1", 105, "at the edge");
  EXPECT_TRUE(known.known_miss());
  EXPECT_FALSE(known.expected_to_pass());
  EXPECT_FALSE(failed.known_miss());
  EXPECT_FALSE(failed.pass());
  EXPECT_TRUE(noted_pass.pass());
  EXPECT_FALSE(noted_pass.known_miss());
  std::ostringstream table;
  print_table(table, {known, failed, noted_pass});
  EXPECT_NE(table.str().find("known miss"), std::string::npos);
  EXPECT_NE(table.str().find("3 rows, 1 pass, 1 fail, 1 known to miss"), std::string::npos) << table.str();
  const auto json = to_json({known, failed});
  EXPECT_TRUE(json["rows"][0]["known_miss"].get<bool>());
  EXPECT_FALSE(json["rows"][1]["known_miss"].get<bool>());
}

}  // namespace calibration_suite_test
}  // namespace nvl::emu
