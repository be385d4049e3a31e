// The sweep table reads report.json defensively: checks and figures it finds become cells, missing keys
// empty cells; a run with a non-zero exit code is a failure.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "emu/sweep/sweep_table.h"

namespace nvl::emu {
namespace sweep_table_test {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SweepPoint point(const std::string& value, std::uint64_t seed) {
  SweepPoint p;
  p.settings = {{"deployment.threshold_tokens", value}};
  p.seed = seed;
  return p;
}

TEST(SweepTable, WritesChecksAndFiguresFromReports) {
  SweepTable t({"deployment.threshold_tokens"});
  const auto good = nlohmann::json::parse(R"({
    "event_log_hash": "abc", "speedup": 12.5,
    "requests": {"completed": 9, "failed": 0},
    "latency_ms": {"ttft": {"p50": 1.25, "p90": 2.5}, "tpot": {"p50": 20, "p90": 21}},
    "checks": {"tokens_once": {"pass": true, "detail": ""}, "kv_drained": {"pass": false, "detail": "3 blocks"}}})");
  t.add(point("512", 1), 1, good, "nvl72emu run s.json --seed 1");
  t.add(point("100000", 2), 0, nlohmann::json(), "nvl72emu run s.json --seed 2");  // no report at all
  EXPECT_TRUE(t.any_failed());

  const auto file = std::filesystem::temp_directory_path() / "nvl_sweep_table_test.csv";
  t.write_csv(file);
  std::istringstream csv(read_all(file));
  std::string header, row1, row2;
  std::getline(csv, header);
  std::getline(csv, row1);
  std::getline(csv, row2);
  std::filesystem::remove(file);
  EXPECT_EQ(header,
            "deployment.threshold_tokens,seed,exit_code,check.kv_drained,check.tokens_once,ttft_p50_ms,ttft_p90_ms,"
            "tpot_p50_ms,tpot_p90_ms,input_tokens_per_s,output_tokens_per_s,completed,failed,in_flight,speedup,"
            "event_log_hash");
  EXPECT_EQ(row1, "512,1,1,FAIL,pass,1.250,2.500,20,21,,,9,0,,12.500,abc");
  EXPECT_EQ(row2, "100000,2,0,,,,,,,,,,,,,");

  const auto j = t.to_json();
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["checks"]["kv_drained"], false);
  EXPECT_EQ(j["runs"][0]["figures"]["ttft_p90_ms"], 2.5);
  EXPECT_TRUE(j["runs"][1]["figures"]["ttft_p90_ms"].is_null());

  std::ostringstream printed;
  t.print(printed);
  EXPECT_NE(printed.str().find("FAIL kv_drained"), std::string::npos) << printed.str();
  EXPECT_NE(printed.str().find("replay: nvl72emu run s.json --seed 1"), std::string::npos) << printed.str();
  EXPECT_EQ(printed.str().find("replay: nvl72emu run s.json --seed 2"), std::string::npos) << printed.str();
}

TEST(SweepTable, ASkippedCheckIsShownAsSkipped) {
  SweepTable t({"run.max_sim_seconds"});
  t.add(point("5", 1), 0, nlohmann::json::parse(R"({"checks": {
    "tokens_once": {"status": "pass", "pass": true, "detail": ""},
    "kv_memory_baseline": {"status": "skipped", "pass": true, "detail": "time limit"}}})"), "nvl72emu run s.json --seed 1");
  EXPECT_FALSE(t.any_failed());
  const auto file = std::filesystem::temp_directory_path() / "nvl_sweep_table_skipped.csv";
  t.write_csv(file);
  const std::string csv = read_all(file);
  std::filesystem::remove(file);
  EXPECT_NE(csv.find("5,1,0,skipped,pass,"), std::string::npos) << csv;
  std::ostringstream printed;
  t.print(printed);
  EXPECT_NE(printed.str().find("1 pass, 1 skipped"), std::string::npos) << printed.str();
}

}  // namespace sweep_table_test
}  // namespace nvl::emu
