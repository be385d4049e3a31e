// Study files and answers: bad input names its key; the answer is read from the runs' figures as the
// study asks (hand-built reports below, each figure chosen so the sentence can be checked by eye).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/study/study_report.h"
#include "emu/study/study_results.h"
#include "emu/study/study_spec.h"

namespace nvl::emu {
namespace study_test {

namespace fs = std::filesystem;

class StudyFile : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("nvl-study-" + std::to_string(::getpid()));
  void SetUp() override {
    fs::create_directories(dir);
    std::ofstream(dir / "base.json") << "{}";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const nlohmann::json& study) {
    const fs::path file = dir / "study.json";
    std::ofstream(file) << study.dump();
    return file.string();
  }
  static nlohmann::json valid() {
    return {{"name", "t"},
            {"question", "How high?"},
            {"scenario", "base.json"},
            {"x", {{"key", "workload.rate"}, {"values", {0.5, 1}}}},
            {"variants", {{{"name", "a"}}, {{"name", "b"}, {"set", {"deployment.router_policy=round_robin"}}}}},
            {"seeds", "1..2"},
            {"metrics", {"latency_ms.ttft.p90"}},
            {"answer", {{"highest_x_within", {{{"metric", "latency_ms.ttft.p90"}, {"max", 2000}}}}}}};
  }
  std::string error_of(const nlohmann::json& study) {
    try {
      load_study(write(study));
    } catch (const rt::InputError& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(StudyFile, ReadsTheQuestionAxisVariantsSeedsAndAnswer) {
  const StudySpec s = load_study(write(valid()));
  EXPECT_EQ(s.scenario, (dir / "base.json").string()) << "relative to the study file";
  EXPECT_EQ(s.x_values, (std::vector<double>{0.5, 1}));
  ASSERT_EQ(s.variants.size(), 2u);
  EXPECT_EQ(s.variants[1].set, (std::vector<std::string>{"deployment.router_policy=round_robin"}));
  EXPECT_EQ(s.seeds, (std::vector<std::uint64_t>{1, 2}));
  ASSERT_EQ(s.bounds.size(), 1u);
  EXPECT_EQ(s.bounds[0].max, 2000.0);
}

TEST_F(StudyFile, TheAxisSetsItsKeyPlainOrThroughAFormat) {
  nlohmann::json study = valid();
  EXPECT_EQ(load_study(write(study)).x_override(1), "workload.rate=1") << "a whole number without a decimal point";
  EXPECT_EQ(load_study(write(study)).x_override(0), "workload.rate=0.5");
  study["x"] = {{"key", "workload.source"}, {"format", "bench:isl={},osl=16"}, {"values", {32768, 65536}}};
  EXPECT_EQ(load_study(write(study)).x_override(1), "workload.source=bench:isl=65536,osl=16");
}

TEST_F(StudyFile, AVariantMayRunAScenarioOfItsOwn) {
  std::ofstream(dir / "other.json") << "{}";
  nlohmann::json study = valid();
  study["variants"][1]["scenario"] = "other.json";
  const StudySpec s = load_study(write(study));
  EXPECT_EQ(s.scenario_of(0), (dir / "base.json").string());
  EXPECT_EQ(s.scenario_of(1), (dir / "other.json").string()) << "relative to the study file";
}

TEST_F(StudyFile, BadInputNamesItsKey) {
  const auto named = [&](nlohmann::json study, const std::string& key) {
    const std::string e = error_of(study);
    EXPECT_NE(e.find(key), std::string::npos) << e;
  };
  nlohmann::json s = valid();
  s["metrics"] = {"latency_ms.ttft.p95"};
  named(s, "metrics");
  s = valid();
  s["metrics"] = {"latency_ms.ttft"};
  named(s, "metrics");  // an object, not a number
  s = valid();
  s["x"]["values"] = nlohmann::json::array();
  named(s, "x.values");
  s = valid();
  s["x"]["values"] = {2, 1};
  named(s, "x.values");
  s = valid();
  s["x"]["format"] = "bench:isl=N";
  named(s, "x.format");
  s = valid();
  s["x"]["format"] = "{}-{}";
  named(s, "x.format");
  s = valid();
  s["variants"][1]["set"] = {"no-equals-sign"};
  named(s, "variants[1].set");
  s = valid();
  s["variants"][1]["name"] = "a";
  named(s, "variants");
  s = valid();
  s["variants"][1]["scenario"] = "missing.json";
  named(s, "variants[1].scenario");
  s = valid();
  s["answer"]["best_variant"] = {{"metric", "throughput.output_tokens_per_s"}, {"goal", "max"}};
  named(s, "answer.highest_x_within");
  s = valid();
  s["answer"] = {{"best_variant", {{"metric", "throughput.output_tokens_per_s"}, {"goal", "most"}}}};
  named(s, "answer.best_variant.goal");
  s = valid();
  s["answer"] = {{"best_x", {{"metric", "latency_ms.ttft.p90"}, {"goal", "least"}}}};
  named(s, "answer.best_x.goal");
  s = valid();
  s["scenario"] = "missing.json";
  named(s, "scenario");
  s = valid();
  s["seeds"] = "3..1";
  named(s, "seeds");
  s = valid();
  s["colour"] = "red";
  named(s, "colour");
}

TEST(ReportFigure, NamesOnlyTheNumbersReportJsonCarries) {
  EXPECT_TRUE(is_report_figure("latency_ms.ttft.p90"));
  EXPECT_TRUE(is_report_figure("throughput.per_gpu.output_tokens_per_s"));
  EXPECT_TRUE(is_report_figure("links.nvlink.mean_utilisation"));
  EXPECT_TRUE(is_report_figure("benchmark.output_tokens_per_s_per_user"));
  EXPECT_FALSE(is_report_figure("latency_ms.ttft"));
  EXPECT_FALSE(is_report_figure("scenario"));
  EXPECT_FALSE(is_report_figure("latency_ms..p90"));
  EXPECT_FALSE(is_report_figure(""));
}

nlohmann::json report(double ttft_p90, double output_per_s, const std::string& stop = "quiescent") {
  // At 10 s: 5 queued on prefill, 1 on dep, 4 at the router; at 20 s: 310 on prefill, 0 on dep.
  const nlohmann::json pools = {{"dep", {{"waiting", {1, 0}}}}, {"prefill", {{"waiting", {5, 310}}}}};
  const nlohmann::json series = {{"t_s", {10, 20}}, {"waiting", {10, 310}}, {"pools", pools}};
  return {{"stop_reason", stop},
          {"timeline", {{"series", series}}},
          {"latency_ms", {{"ttft", {{"p90", ttft_p90}}}}},
          {"throughput", {{"output_tokens_per_s", output_per_s}}},
          {"kernels", {{"library", "roofline"}, {"measured_share", 0.0}}}};
}

StudySpec two_variants_three_rates() {
  StudySpec s;
  s.name = "t";
  s.x_key = "workload.rate";
  s.x_label = "sessions/s";
  s.x_values = {1, 2, 3};
  s.variants = {{"a", {}, {}}, {"b", {}, {}}};
  s.seeds = {1, 2};
  s.metrics = {"throughput.output_tokens_per_s"};
  s.bounds = {{"latency_ms.ttft.p90", 2000.0, std::nullopt}};
  return s;
}

// a: TTFT p90 1000/1200 at 1, 1500/1900 at 2, 2000/2500 at 3: meets up to 2, and at 3 its worst seed
// reaches 2500 (mean 2250). b: drains at 1, stops at its time limit at 2: up to 1.
TEST(StudyAnswer, TheHighestValueEverySeedMeetsAndWhatBreaksNext) {
  StudyResults r(two_variants_three_rates());
  const double a[3][2] = {{1000, 1200}, {1500, 1900}, {2000, 2500}};
  for (std::size_t x = 0; x < 3; ++x) {
    for (std::size_t k = 0; k < 2; ++k) {
      r.add(0, x, k, 0, report(a[x][k], 100));
      r.add(1, x, k, 0, report(500, 90, x == 0 ? "quiescent" : "time_limit"));
    }
  }
  const std::string answer = r.answer();
  EXPECT_NE(answer.find("a goes highest: sessions/s up to 2."), std::string::npos) << answer;
  EXPECT_NE(answer.find("**a**: sessions/s up to **2** meets latency_ms.ttft.p90 <= 2 k on all 2 seeds; at 3 "
                        "latency_ms.ttft.p90 reaches 2.5 k (worst seed; mean 2.25 k, bound 2 k)"),
            std::string::npos)
      << answer;
  EXPECT_NE(answer.find("**b**: sessions/s up to **1** meets"), std::string::npos) << answer;
  EXPECT_NE(answer.find("at 2 the runs no longer drain before run.max_sim_seconds (seed 1; longest queue by pool: "
                        "prefill 310 at 20 s, router 4 at 10 s, dep 1 at 10 s)"),
            std::string::npos)
      << answer << "where requests piled up, longest queue first";
  const SeedSpread s = r.spread("latency_ms.ttft.p90", 0, 2);
  EXPECT_DOUBLE_EQ(s.mean, 2250);
  EXPECT_DOUBLE_EQ(s.min, 2000);
  EXPECT_DOUBLE_EQ(s.max, 2500);
  EXPECT_NE(r.calibration().find("roofline: 0% of GPU time from measured tables"), std::string::npos) << r.calibration();
  EXPECT_NE(r.calibration().find("not yet calibrated on Blackwell"), std::string::npos) << "roofline only";
}

// At each rate a makes 100 and 120 output tok/s (mean 110), b 80 and 100 (mean 90): a, +22.2%.
TEST(StudyAnswer, TheBestVariantAtEachValueWithItsMarginOverTheNext) {
  StudySpec spec = two_variants_three_rates();
  spec.bounds.clear();
  spec.best_metric = "throughput.output_tokens_per_s";
  StudyResults r(spec);
  for (std::size_t x = 0; x < 3; ++x) {
    r.add(0, x, 0, 0, report(1, 100));
    r.add(0, x, 1, 0, report(1, 120));
    r.add(1, x, 0, 0, report(1, 80));
    r.add(1, x, 1, 0, report(1, 100));
  }
  const std::string answer = r.answer();
  EXPECT_NE(answer.find("The most throughput.output_tokens_per_s: a at every sessions/s studied."), std::string::npos) << answer;
  EXPECT_NE(answer.find("**a**, 110 (seeds 100 to 120), +22.2% against b (90)"), std::string::npos) << answer;
}

// b's TTFT p90 is lowest at 2 (mean 150) but those runs stop at their time limit: a runner-up that did not
// drain is said to be one.
TEST(StudyAnswer, ARunnerUpThatDidNotDrainIsSaidToBeOne) {
  StudySpec spec = two_variants_three_rates();
  spec.bounds.clear();
  spec.best_metric = "latency_ms.ttft.p90";
  spec.best_is_max = false;
  StudyResults r(spec);
  for (std::size_t x = 0; x < 3; ++x) {
    for (std::size_t k = 0; k < 2; ++k) {
      r.add(0, x, k, 0, report(100, 1));
      r.add(1, x, k, 0, report(200, 1, "time_limit"));
    }
  }
  EXPECT_NE(r.answer().find("**a**, 100 (seeds 100 to 100), -50.0% against b (200), not every run of which drained."),
            std::string::npos)
      << r.answer();
}

// One variant over three thresholds: TTFT p90 means 900 at 1, 600 at 2 and 300 at 3, but the runs at 3
// stop at their time limit (their unfinished requests flatter the figure): the answer is 2, -33.3% against 1.
TEST(StudyAnswer, TheBestValueOfTheAxisAmongThoseThatDrain) {
  StudySpec spec = two_variants_three_rates();
  spec.variants = {{"base", {}, {}}};
  spec.bounds.clear();
  spec.best_metric = "latency_ms.ttft.p90";
  spec.best_is_max = false;
  spec.best_over_x = true;
  StudyResults r(spec);
  const double ttft[3][2] = {{800, 1000}, {500, 700}, {200, 400}};
  for (std::size_t x = 0; x < 3; ++x) {
    for (std::size_t k = 0; k < 2; ++k) r.add(0, x, k, 0, report(ttft[x][k], 1, x == 2 ? "time_limit" : "quiescent"));
  }
  const std::string answer = r.answer();
  EXPECT_EQ(answer.rfind("The least latency_ms.ttft.p90: sessions/s = 2.", 0), 0u) << answer;
  EXPECT_NE(answer.find("sessions/s = **2**: latency_ms.ttft.p90 600 (seeds 500 to 700), -33.3% against 1 (900)."),
            std::string::npos)
      << answer;
}

TEST(StudyAnswer, VariantsThatGoEquallyHighAreNamedTogether) {
  StudyResults r(two_variants_three_rates());
  for (std::size_t x = 0; x < 3; ++x) {
    for (std::size_t k = 0; k < 2; ++k) {
      r.add(0, x, k, 0, report(x == 2 ? 3000 : 100, 1));
      r.add(1, x, k, 0, report(x == 2 ? 4000 : 100, 1));
    }
  }
  EXPECT_EQ(r.answer().rfind("a and b go equally high: sessions/s up to 2.", 0), 0u) << r.answer();
}

TEST(StudyPages, TheMarkdownStatesTheAnswerAndTheHtmlDrawsABandPerVariant) {
  StudyResults r(two_variants_three_rates());
  for (std::size_t x = 0; x < 3; ++x) {
    for (std::size_t k = 0; k < 2; ++k) {
      r.add(0, x, k, 0, report(1000 + 100 * static_cast<double>(k), 100));
      r.add(1, x, k, 0, report(900, 90));
    }
  }
  std::ostringstream md, html;
  write_study_markdown(md, r, "nvl72emu study t.json");
  write_study_html(html, r, "nvl72emu study t.json");
  EXPECT_NE(md.str().find("**Answer.** "), std::string::npos);
  EXPECT_NE(md.str().find("| a | 1 | 100 | 1.05 k (1 k to 1.1 k) | yes |"), std::string::npos) << md.str();
  EXPECT_NE(md.str().find("nvl72emu study t.json"), std::string::npos);
  std::size_t bands = 0;
  for (auto p = html.str().find("<polygon"); p != std::string::npos; p = html.str().find("<polygon", p + 1)) ++bands;
  EXPECT_EQ(bands, 2u * 2) << "two figures, a band per variant";
}

}  // namespace study_test
}  // namespace nvl::emu
