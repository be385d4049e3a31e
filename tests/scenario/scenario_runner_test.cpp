// The CI scenario end to end: every request completes, every checker passes, one seed gives one
// event-log hash whatever the outputs, and the timeline adds up to the run's own totals.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/report/html_report.h"
#include "emu/rt/errors.h"
#include "emu/scenario/runner.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace scenario_runner_test {

const std::filesystem::path kSmallPd = std::filesystem::path(NVL_SCENARIO_DIR) / "ci" / "small-pd.json";

const NamedCheck* find_check(const RunReport& r, const std::string& name) {
  for (const auto& c : r.checks) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

TEST(ScenarioRunner, TheCiScenarioCompletesEveryRequest) {
  const RunReport r = run_scenario(load_scenario(kSmallPd));
  EXPECT_EQ(r.stop_reason, "quiescent");
  EXPECT_GT(r.requests_total, 0u);
  EXPECT_EQ(r.requests_completed, r.requests_total);
  EXPECT_EQ(r.requests_failed, 0u);
  EXPECT_EQ(r.requests_in_flight, 0u);
  EXPECT_EQ(r.routing.at("local") + r.routing.at("prefill_worker"), r.requests_total);
  EXPECT_GT(r.routing.at("prefill_worker"), 0u) << "the coding-agent prompts include long uncached ones";
  EXPECT_GT(r.kv_transfer_bytes, 0u);
  EXPECT_EQ(r.ttft.count, r.requests_completed);
  EXPECT_LE(r.ttft.p50, r.ttft.p99);
  EXPECT_GT(r.output_tokens_per_s(), 0);
  EXPECT_EQ(r.gpus, 16u);
  EXPECT_DOUBLE_EQ(r.gpu_seconds_per_wall_second(), 16 * r.speedup());
}

TEST(ScenarioRunner, EveryStandardCheckPassesOnTheCiScenario) {
  const RunReport r = run_scenario(load_scenario(kSmallPd));
  for (const char* name : {"requests_accounted", "tokens_once_in_order", "kv_memory_baseline", "no_error_events"}) {
    const NamedCheck* c = find_check(r, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_TRUE(c->result.pass) << name << ": " << c->result.detail;
    EXPECT_FALSE(c->result.skipped) << "the CI scenario drains: " << c->result.detail;
  }
  EXPECT_TRUE(r.checks_pass());
}

TEST(ScenarioRunner, OneSeedGivesOneEventLogHash) {
  const RunReport a = run_scenario(load_scenario(kSmallPd));
  const RunReport b = run_scenario(load_scenario(kSmallPd));
  EXPECT_EQ(a.event_log_hash, b.event_log_hash);
  EXPECT_EQ(a.sim_time_s, b.sim_time_s);
  const RunReport other = run_scenario(load_scenario(kSmallPd, {"seed=2"}));
  EXPECT_NE(other.event_log_hash, a.event_log_hash);
}

TEST(ScenarioRunner, OutputsAndTheProgressBarLeaveTheHashAlone) {
  const RunReport quiet = run_scenario(load_scenario(kSmallPd, {"outputs.trace=false", "outputs.timeline_interval_s=7"}));
  std::ostringstream bar;
  RunControls controls;
  controls.progress = &bar;
  const RunReport loud = run_scenario(
      load_scenario(kSmallPd, {"outputs.trace_window_s=1000", "outputs.timeline_interval_s=0.25"}), controls);
  EXPECT_EQ(quiet.event_log_hash, loud.event_log_hash);
  EXPECT_EQ(quiet.trace, nullptr);
  ASSERT_NE(loud.trace, nullptr);
  EXPECT_GT(loud.trace->summary().events, 0u);
}

TEST(ScenarioRunner, StepSpansInTheTraceCarryTheirBatchAsJsonArguments) {
  // The arguments are written out as text: they must read back as the JSON object they stand for, with a
  // rank on the decoding pool's GPUs only. The pool's name needs escaping.
  const RunReport r = run_scenario(load_scenario(kSmallPd, {"outputs.trace_window_s=1000", R"(deployment.pools=[
      {"name": "dep \"a\"", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}])"}));
  ASSERT_NE(r.trace, nullptr);
  std::ostringstream text;
  r.trace->write(text);
  const nlohmann::json trace = nlohmann::json::parse(text.str());
  std::set<std::string> pools_with_rank, pools_without;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string name = e.value("name", "");
    if (name.size() < 5 || name.substr(name.size() - 5) != " step" || !e.contains("args")) continue;
    const nlohmann::json& a = e.at("args");
    EXPECT_EQ(a.at("batch").get<int>(), a.at("prefill_requests").get<int>() + a.at("decode_requests").get<int>());
    for (const char* key : {"decode_tokens", "instance", "kv_context_tokens", "prefill_tokens", "step"}) {
      EXPECT_TRUE(a.at(key).is_number_integer()) << key;
    }
    int first = -1, last = -1;  // a range of DeepSeek-V3's 61 layers
    EXPECT_EQ(std::sscanf(a.at("layers").get<std::string>().c_str(), "%d-%d", &first, &last), 2);
    EXPECT_TRUE(0 <= first && first <= last && last <= 60) << a.at("layers");
    (a.contains("rank") ? pools_with_rank : pools_without).insert(a.at("pool").get<std::string>());
  }
  EXPECT_EQ(pools_with_rank, (std::set<std::string>{"dep \"a\""}));
  EXPECT_EQ(pools_without, (std::set<std::string>{"prefill"}));
}

TEST(ScenarioRunner, TheDeterminismCheckRunsTwice) {
  const RunReport r = run_scenario(load_scenario(kSmallPd, {"checks.determinism=true"}));
  const NamedCheck* c = find_check(r, "determinism");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->result.pass) << c->result.detail;
  EXPECT_NE(c->result.detail.find(r.event_log_hash), std::string::npos);
  RunControls controls;
  controls.check_determinism = true;
  EXPECT_NE(find_check(run_scenario(load_scenario(kSmallPd, {"run.max_sim_seconds=3"}), controls), "determinism"),
            nullptr);
}

TEST(ScenarioRunner, TheGreenContextLayoutServesEveryRequestOnItsMixedPoolTwiceAlike) {
  // A mixed DEP8 pool with prefill on 30% of the SMs and no prefill pool; the file asks for the
  // determinism check.
  const RunReport r = run_scenario(load_scenario(std::filesystem::path(NVL_SCENARIO_DIR) / "layouts" / "green-context-mixed.json"));
  EXPECT_EQ(r.stop_reason, "quiescent");
  EXPECT_EQ(r.requests_completed, r.requests_total);
  EXPECT_EQ(r.routing.at("local"), r.requests_total);
  ASSERT_NE(find_check(r, "determinism"), nullptr);
  for (const auto& c : r.checks) EXPECT_TRUE(c.result.pass) << c.name << ": " << c.result.detail;
}

TEST(ScenarioRunner, AssertionsBecomeChecks) {
  const RunReport r = run_scenario(load_scenario(
      kSmallPd, {R"(checks.assertions=[{"metric": "requests.failed", "max": 0},
                                      {"metric": "requests.completed", "max": 1}])"}));
  const NamedCheck* none_failed = find_check(r, "assert requests.failed");
  const NamedCheck* at_most_one = find_check(r, "assert requests.completed");
  ASSERT_NE(none_failed, nullptr);
  ASSERT_NE(at_most_one, nullptr);
  EXPECT_TRUE(none_failed->result.pass) << none_failed->result.detail;
  EXPECT_FALSE(at_most_one->result.pass) << "more than one request completes";
  EXPECT_FALSE(r.checks_pass());
}

TEST(ScenarioRunner, TheTimelineAddsUpToTheRunsTotals) {
  const RunReport r = run_scenario(load_scenario(kSmallPd, {"outputs.timeline_interval_s=2"}));
  const Timeline& t = r.timeline;
  ASSERT_GT(t.samples(), 0u);
  EXPECT_EQ(t.samples(), static_cast<std::size_t>(std::ceil(r.sim_time_s / 2.0)));
  EXPECT_DOUBLE_EQ(t.t_s.back(), r.sim_time_s);
  // Every request completed, so the tokens delivered over time are the completed requests' tokens.
  double output = 0, input = 0, prev = 0;
  for (std::size_t i = 0; i < t.samples(); ++i) {
    output += t.output_tokens_per_s[i] * (t.t_s[i] - prev);
    input += t.input_tokens_per_s[i] * (t.t_s[i] - prev);
    prev = t.t_s[i];
  }
  EXPECT_NEAR(output, static_cast<double>(r.output_tokens), 1e-6 * static_cast<double>(r.output_tokens));
  EXPECT_NEAR(input, static_cast<double>(r.input_tokens), 1e-6 * static_cast<double>(r.input_tokens));
  EXPECT_EQ(t.waiting.back() + t.running.back(), 0) << "the run drained";
  ASSERT_EQ(t.gpu_busy.size(), 16u);
  for (const auto& gpu : t.gpu_busy) {
    ASSERT_EQ(gpu.size(), t.samples());
    for (double b : gpu) EXPECT_TRUE(b >= 0 && b <= 1) << b;
    EXPECT_GT(std::accumulate(gpu.begin(), gpu.end(), 0.0), 0) << "every GPU steps (the normal group in lockstep)";
  }
  ASSERT_TRUE(t.link_mean.contains("nvlink"));
  EXPECT_GT(r.links.at("nvlink").peak_channel, 0) << "EP all-to-alls and P/D pushes cross NVLink";
  EXPECT_GT(r.links.at("nic").peak_channel, 0) << "the prefill worker's KV moves over RDMA";
  const double hits = r.kv_hits.rate(r.kv_hits.gpu_tokens) + r.kv_hits.rate(r.kv_hits.grace_tokens) +
                      r.kv_hits.rate(r.kv_hits.remote_tokens);
  EXPECT_GT(hits, 0) << "agent sessions resend their context";
  EXPECT_LE(hits, 1);
}

// report.json carries the timeline's series (timeline.series), one value per sample in every list, and
// they add up to the run's totals: the output tokens delivered per interval sum to every token delivered
// (small-pd: no request fails, so that is every completed request's tokens).
TEST(ScenarioRunner, ReportJsonCarriesTheTimelineSeries) {
  const RunReport r = run_scenario(load_scenario(kSmallPd));
  const nlohmann::json t = to_json(r)["timeline"];
  const std::size_t n = t["samples"].get<std::size_t>();
  ASSERT_GT(n, 2u);
  const nlohmann::json& s = t["series"];
  for (const char* flat : {"t_s", "input_tokens_per_s", "output_tokens_per_s", "waiting", "running", "kv_lookup_tokens"}) {
    ASSERT_TRUE(s.contains(flat)) << flat;
    EXPECT_EQ(s[flat].size(), n) << flat;
  }
  for (const char* nested : {"kv_hit_tokens", "link_mean", "link_peak", "gpu_busy"}) {
    ASSERT_TRUE(s.contains(nested) && !s[nested].empty()) << nested;
    for (const auto& [name, values] : s[nested].items()) EXPECT_EQ(values.size(), n) << nested << "." << name;
  }
  EXPECT_EQ(s["gpu_busy"].size(), 16u) << "small-pd: 8 DEP ranks + a TP8 prefill worker";
  EXPECT_TRUE(s["kv_hit_tokens"].contains("gpu"));
  EXPECT_TRUE(s["link_mean"].contains("nvlink"));
  double tokens = 0, previous_t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double t_i = s["t_s"][i].get<double>();
    EXPECT_GT(t_i, previous_t);
    tokens += s["output_tokens_per_s"][i].get<double>() * (t_i - previous_t);
    previous_t = t_i;
  }
  EXPECT_NEAR(tokens, static_cast<double>(r.output_tokens), 1e-4 * static_cast<double>(r.output_tokens))
      << "6-digit rounding of each value: at most 1e-6 relative each";
}

// Per pool: queued and running requests add up to the run's (the router's own queue aside) and KV
// occupancy is a share; the TTFT split has a value exactly in the intervals where first tokens came
// (input tokens are counted at the first token), and the prefill worker's requests show a KV transfer.
TEST(ScenarioRunner, TheTimelineSplitsLoadByPoolAndTtftByPart) {
  const RunReport r = run_scenario(load_scenario(kSmallPd));
  const Timeline& t = r.timeline;
  const std::size_t n = t.samples();
  ASSERT_EQ(t.pools.size(), 2u);
  ASSERT_TRUE(t.pools.contains("dep") && t.pools.contains("prefill"));
  double peak_kv = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double waiting = 0, running = 0;
    for (const auto& [name, p] : t.pools) {
      ASSERT_EQ(p.kv_used.size(), n) << name;
      waiting += p.waiting[i];
      running += p.running[i];
      EXPECT_GE(p.kv_used[i], 0) << name;
      EXPECT_LE(p.kv_used[i], 1) << name;
    }
    EXPECT_DOUBLE_EQ(running, t.running[i]);
    EXPECT_LE(waiting, t.waiting[i]);
    peak_kv = std::max(peak_kv, t.pools.at("dep").kv_used[i]);
  }
  EXPECT_GT(peak_kv, 0) << "decoding requests hold KV blocks";
  for (const char* part : {"queue", "prefill", "kv_transfer", "first_decode"}) {
    ASSERT_TRUE(t.ttft_split_s.contains(part)) << part;
    ASSERT_EQ(t.ttft_split_s.at(part).size(), n) << part;
  }
  double transfer = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double prefill = t.ttft_split_s.at("prefill")[i];
    EXPECT_EQ(std::isnan(prefill), t.input_tokens_per_s[i] == 0) << "interval " << i;
    if (std::isnan(prefill)) continue;
    EXPECT_GT(prefill, 0);
    EXPECT_GE(t.ttft_split_s.at("queue")[i], 0);
    transfer = std::max(transfer, t.ttft_split_s.at("kv_transfer")[i]);
  }
  EXPECT_GT(transfer, 0) << "long prompts go to the prefill worker and their KV to the decode rank";
}

TEST(ScenarioRunner, TheTimeLimitStopsARun) {
  const RunReport r = run_scenario(load_scenario(kSmallPd, {"run.max_sim_seconds=5"}));
  EXPECT_EQ(r.stop_reason, "time_limit");
  EXPECT_LE(r.sim_time_s, 5.0);
  EXPECT_EQ(r.requests_failed, 0u);
  const NamedCheck* baseline = find_check(r, "kv_memory_baseline");
  ASSERT_NE(baseline, nullptr);
  EXPECT_TRUE(baseline->result.skipped) << "requests are still in flight";
  EXPECT_TRUE(r.checks_pass()) << "a skipped check does not fail the run";
  // Every report says skipped, none says pass.
  EXPECT_EQ(to_json(r)["checks"]["kv_memory_baseline"]["status"], "skipped");
  EXPECT_EQ(to_json(r)["checks"]["requests_accounted"]["status"], "pass");
  std::ostringstream summary;
  print_summary(summary, r);
  EXPECT_NE(summary.str().find("kv_memory_baseline=skipped"), std::string::npos) << summary.str();
  EXPECT_NE(summary.str().find("  skipped kv_memory_baseline: the run stopped at its time limit"), std::string::npos);
  std::ostringstream html;
  write_html_report(html, r);
  EXPECT_NE(html.str().find("<td>kv_memory_baseline</td><td class=\"skipped\">skipped</td>"), std::string::npos);
}

TEST(ScenarioRunner, RecordedStartsNeedATraceThatHasThem) {
  try {
    run_scenario(load_scenario(kSmallPd, {"workload.starts=recorded"}));
    FAIL() << "the coding-agent generator has no recorded start times";
  } catch (const rt::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.starts"), std::string::npos) << e.what();
  }
}

TEST(ScenarioRunner, RecordedStartsReplayTheTraceTimestampsScaled) {
  const auto dir = std::filesystem::temp_directory_path() / "nvl_scenario_recorded";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.jsonl") << R"({"timestamp": 0, "input_length": 300, "output_length": 4, "hash_ids": [1]})"
                                 << "\n"
                                 << R"({"timestamp": 20000, "input_length": 300, "output_length": 4, "hash_ids": [2]})"
                                 << "\n";
  std::ofstream(dir / "s.json") << R"({"name": "rec", "model": {"profile": "deepseek-v3"},
      "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}]}, "workload": {"source": "t.jsonl", "starts": "recorded"}})";
  const RunReport at_pace = run_scenario(load_scenario(dir / "s.json"));
  const RunReport twice_as_fast = run_scenario(load_scenario(dir / "s.json", {"workload.rate_scale=2"}));
  ASSERT_EQ(at_pace.requests_completed, 2u);
  // The second request arrives at 20 s (10 s at rate_scale 2) and the run ends shortly after it.
  EXPECT_GT(at_pace.sim_time_s, 20.0);
  EXPECT_LT(at_pace.sim_time_s, 21.0);
  EXPECT_GT(twice_as_fast.sim_time_s, 10.0);
  EXPECT_LT(twice_as_fast.sim_time_s, 11.0);
}

}  // namespace scenario_runner_test
}  // namespace nvl::emu
