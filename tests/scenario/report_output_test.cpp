// The report outputs: the Chrome trace keeps only its window and cap and says what it cut; the SVG
// charts and the HTML page are self-contained and show the data they are given, faults included.
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/faults/fault_timeline.h"
#include "emu/report/html_report.h"
#include "emu/report/si_figure.h"
#include "emu/report/request_latency.h"
#include "emu/report/run_comparison.h"
#include "emu/report/svg_chart.h"
#include "emu/report/timeline_json.h"
#include "emu/report/trace_recorder.h"
#include "emu/rt/event_log.h"

namespace nvl::emu {
namespace report_output_test {

rt::Time at_ms(std::int64_t ms) { return rt::Time::zero() + rt::ms(ms); }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// The part of the page from one heading (or the start of one chart) to the next.
std::string between(const std::string& html, const std::string& from, const std::string& to) {
  const auto a = html.find(from);
  if (a == std::string::npos) return "";
  const auto b = html.find(to, a + from.size());
  return html.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

RunReport report_over_100_s() {
  RunReport r;
  r.scenario = "faulty";
  r.timeline.t_s = {0, 50, 100};
  r.timeline.output_tokens_per_s = {100, 20, 100};
  r.timeline.input_tokens_per_s = {1000, 0, 1000};
  r.timeline.waiting = {1, 9, 0};
  r.timeline.running = {3, 1, 2};
  return r;
}

std::string html_of(const RunReport& r) {
  std::ostringstream out;
  write_html_report(out, r);
  return out.str();
}

TEST(TraceRecorder, KeepsTheWindowAndCountsWhatItCuts) {
  TraceRecorder t(TraceOptions{.start_s = 1.0, .window_s = 1.0, .max_events = 2});
  const int gpu = t.process("gpu 0");
  const int stream = t.thread(gpu, "decode");
  t.span(gpu, stream, "early", at_ms(500), at_ms(600));    // before the window
  t.span(gpu, stream, "step", at_ms(1000), at_ms(1020));   // kept
  t.instant(gpu, "gpu_lost", at_ms(1500), "xid 79");        // kept
  t.counter(gpu, "util", at_ms(1600), 0.5);                 // over the cap
  t.span(gpu, stream, "late", at_ms(2000), at_ms(2100));    // after the window (its end is exclusive)
  const TraceSummary s = t.summary();
  EXPECT_EQ(s.events, 2u);
  EXPECT_EQ(s.outside_window, 2u);
  EXPECT_EQ(s.over_cap, 1u);

  std::ostringstream out;
  t.write(out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  const auto& ev = j.at("traceEvents");
  std::size_t spans = 0, instants = 0, names = 0;
  for (const auto& e : ev) {
    const std::string ph = e.at("ph");
    if (ph == "X") {
      ++spans;
      EXPECT_EQ(e.at("name"), "step");
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 1'000'000.0);  // microseconds
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 20'000.0);
      EXPECT_EQ(e.at("pid"), gpu);
      EXPECT_EQ(e.at("tid"), stream);
    }
    if (ph == "i") ++instants;
    if (ph == "M") ++names;
  }
  EXPECT_EQ(spans, 1u);
  EXPECT_EQ(instants, 1u);
  EXPECT_EQ(names, 2u);  // the process and the thread
  EXPECT_EQ(j.at("otherData").at("over_cap"), 1);
}

TEST(TraceRecorder, WritesSpanArgumentsAndEachTrackInTimeOrder) {
  TraceRecorder t(TraceOptions{.start_s = 0, .window_s = 10});
  const int link = t.process("link a");
  const int transfers = t.thread(link, "transfers");
  const int gpu = t.process("gpu 0");
  const int stream = t.thread(gpu, "decode");
  // Recorded as they end: the long transfer that started first ends last.
  t.span(link, transfers, "short", at_ms(20), at_ms(30), R"({"bytes": 5})");
  t.span(gpu, stream, "decode step", at_ms(5), at_ms(40), R"({"batch": 3})");
  t.span(link, transfers, "long", at_ms(10), at_ms(50));
  std::ostringstream out;
  t.write(out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::vector<std::string> order;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    order.push_back(e.at("name"));
    if (e.at("name") == "short") {
      EXPECT_EQ(e.at("args").at("bytes"), 5);
    } else if (e.at("name") == "decode step") {
      EXPECT_EQ(e.at("args").at("batch"), 3);
    } else {
      EXPECT_FALSE(e.contains("args"));
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"long", "short", "decode step"}));
}

TEST(TraceRecorder, WritesMicrosecondsToTheNanosecondAndThreadsPerProcess) {
  TraceRecorder t(TraceOptions{.start_s = 0, .window_s = 10});
  const int a = t.process("gpu 0");
  const int b = t.process("gpu 1");
  const int a_decode = t.thread(a, "decode");
  const int b_decode = t.thread(b, "decode");
  EXPECT_NE(a_decode, b_decode) << "one thread name in two processes is two threads";
  EXPECT_EQ(t.thread(a, "decode"), a_decode);
  EXPECT_EQ(t.process("gpu 0"), a);
  const rt::Time start = rt::Time::zero() + rt::ns(1'234'567'891);
  t.span(a, a_decode, "step \"q\"", start, start + rt::ns(7));
  t.counter(b, "util", rt::Time::zero() + rt::ns(1), 2.0 / 3.0);
  std::ostringstream out;
  t.write(out);
  const std::string text = out.str();
  EXPECT_NE(text.find(R"("name": "step \"q\"", "ts": 1234567.891, "dur": 0.007})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts": 0.001, "args": {"value": 0.667}})"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("otherData").at("events"), 2);
}

TEST(SvgChart, DrawsEachSeriesWithItsLegend) {
  const std::string svg = SvgChart::lines({{"input", {0, 1, 2}, {5, 10, 5}}, {"out<put>", {0, 1, 2}, {1, 2, 3}}},
                                          {"Throughput", "s", "tokens/s", std::nullopt, false});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  std::size_t lines = 0;
  for (auto p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find("out&lt;put&gt;"), std::string::npos) << "names are escaped";
  EXPECT_NE(SvgChart::lines({}, {"Empty", "s", "", std::nullopt, false}).find("no data"), std::string::npos);
}

TEST(SvgChart, AHeatmapShadesByValue) {
  const std::string svg = SvgChart::heatmap({"gpu0", "gpu1"}, {{0.0, 1.0}, {0.5, 0.5}}, 2.0,
                                            {"GPU", "s", "GPU", std::nullopt, false});
  EXPECT_NE(svg.find("rgb(255,255,255)"), std::string::npos);  // idle
  EXPECT_NE(svg.find("rgb(0,0,255)"), std::string::npos);      // busy
  EXPECT_NE(svg.find("gpu1"), std::string::npos);
}

TEST(HtmlReport, IsOnePageWithItsPlotsAndChecks) {
  RunReport r;
  r.scenario = "t";
  r.ttft.quantiles = {10, 20, 30};
  r.tpot.quantiles = {1, 2, 3};
  r.timeline.t_s = {1, 2};
  r.timeline.output_tokens_per_s = {100, 200};
  r.timeline.input_tokens_per_s = {1000, 0};
  r.timeline.waiting = {1, 0};
  r.timeline.running = {3, 2};
  r.timeline.pools["decode"] = {{1, 0}, {3, 2}, {0.5, 0.25}};
  r.timeline.pools["prefill"] = {{7, 1}, {1, 1}, {0.1, 0.1}};
  const double gap = std::numeric_limits<double>::quiet_NaN();
  r.timeline.ttft_split_s = {{"queue", {0.01, gap}}, {"prefill", {0.2, gap}}, {"kv_transfer", {0.05, gap}}, {"first_decode", {0.02, gap}}};
  r.checks.push_back({"tokens_once_in_order", {false, "request 4: the first token delivered twice"}});
  std::ostringstream out;
  write_html_report(out, r);
  const std::string html = out.str();
  EXPECT_NE(html.find("<!DOCTYPE html>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://", html.find("<body")), html.find("http://www.w3.org/2000/svg", html.find("<body")))
      << "no network references besides the SVG namespace";
  for (const char* title : {"TTFT CDF", "TPOT CDF", "Throughput", "Requests queued and running", "Compute busy share",
                            "Link utilisation", "KV hit rate"}) {
    EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  // The pools' plots name each pool; the TTFT split each part, in milliseconds.
  for (const char* title : {"Requests queued per pool", "Batch size per pool", "GPU KV cache held by requests per pool",
                            "TTFT split"}) {
    const std::string chart = between(html, title, "</svg>");
    ASSERT_FALSE(chart.empty()) << title;
    EXPECT_EQ(chart.find("no data"), std::string::npos) << title;
  }
  const std::string per_pool = between(html, "Requests queued per pool", "</svg>");
  EXPECT_NE(per_pool.find(">decode<"), std::string::npos);
  EXPECT_NE(per_pool.find(">prefill<"), std::string::npos);
  const std::string split = between(html, "TTFT split", "</svg>");
  for (const char* part : {">queue<", ">prefill<", ">kv_transfer<", ">first_decode<"}) EXPECT_NE(split.find(part), std::string::npos) << part;
  EXPECT_NE(html.find("FAIL"), std::string::npos);
  EXPECT_NE(html.find("the first token delivered twice"), std::string::npos);
}

TEST(TimelineJson, ReadsBackWhatItWroteWithGapsAsGaps) {
  Timeline t = report_over_100_s().timeline;
  const double gap = std::numeric_limits<double>::quiet_NaN();
  t.kv_lookup_tokens = {10, 0, 5};
  t.kv_hit_tokens["gpu"] = {5, 0, 1.0 / 3.0};
  t.link_mean["nvlink"] = {0.1, 0.2, 0.3};
  t.link_peak["nvlink"] = {0.2, 0.4, 0.6};
  t.pools["decode"] = {{1, 2, 3}, {4, 5, 6}, {0.5, 0.25, 0}};
  t.ttft_split_s["queue"] = {0.01, gap, 0.02};
  const Timeline back = timeline_from_json(nlohmann::json::parse(to_json(t).dump()));
  EXPECT_EQ(back.t_s, t.t_s);
  EXPECT_EQ(back.output_tokens_per_s, t.output_tokens_per_s);
  EXPECT_EQ(back.pools.at("decode").running, t.pools.at("decode").running);
  EXPECT_NEAR(back.kv_hit_tokens.at("gpu")[2], 1.0 / 3.0, 1e-6) << "six significant digits";
  ASSERT_EQ(back.ttft_split_s.at("queue").size(), 3u);
  EXPECT_TRUE(std::isnan(back.ttft_split_s.at("queue")[1])) << "a gap stays a gap";
  nlohmann::json broken = to_json(t);
  broken["series"]["waiting"] = "many";
  EXPECT_THROW(
      {
        try {
          timeline_from_json(broken);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("series.waiting"), std::string::npos) << e.what();
          throw;
        }
      },
      std::invalid_argument);
  broken["series"].erase("waiting");
  EXPECT_THROW(timeline_from_json(broken), std::invalid_argument);
}

// Hand figures: TTFT p50 80 ms there, 100 ms here: +25.0%; GPU hit rate 40% there, 50% here: +10.0 pt.
TEST(RunComparison, SetsEachFigureBesideTheOtherRunsWithItsChange) {
  OtherRun other;
  other.label = "base";
  other.report = {{"latency_ms", {{"ttft", {{"p50", 80.0}}}}}, {"kv", {{"hit_rate_gpu", 0.4}}}, {"scenario", "s"}};
  const nlohmann::json mine = {{"latency_ms", {{"ttft", {{"p50", 100.0}}}}}, {"kv", {{"hit_rate_gpu", 0.5}}}};
  const std::string html = comparison_html(mine, other);
  EXPECT_NE(html.find("<h2>Compared with base</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>TTFT p50 (ms)</td><td>100</td><td>80</td><td>+25.0%</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>KV hit rate GPU</td><td>50.0%</td><td>40.0%</td><td>+10.0 pt</td>"), std::string::npos) << html;
  EXPECT_EQ(html.find("TPOT"), std::string::npos) << "figures neither report has are left out";
}

TEST(SvgChart, MarksEventsInsideTheDataOnly) {
  ChartOptions opts{"Throughput", "s", "tokens/s", std::nullopt, false};
  opts.markers = {{5, "1", "fault 1 <gpu_lost>"}, {50, "2", "after the data"}};
  opts.marker_legend = "fault hit";
  const std::string svg = SvgChart::lines({{"output", {0, 10}, {1, 2}}}, opts);
  EXPECT_EQ(count(svg, "<g><title>"), 1u);
  EXPECT_NE(svg.find("<title>fault 1 &lt;gpu_lost&gt;</title>"), std::string::npos);
  EXPECT_EQ(svg.find("after the data"), std::string::npos);
  EXPECT_NE(svg.find(">fault hit</text>"), std::string::npos);
  opts.markers.erase(opts.markers.begin());
  EXPECT_EQ(SvgChart::lines({{"output", {0, 10}, {1, 2}}}, opts).find("fault hit"), std::string::npos)
      << "no legend entry without a marker shown";
}

TEST(HtmlReport, ShowsEachFaultWithItsTimes) {
  FaultTimeline faults;
  FaultTarget rank7;
  rank7.type = FaultTarget::Type::gpu;
  rank7.gpu = 7;
  rank7.text = "normal rank 7";
  const std::size_t lost = faults.hit(at_ms(30'000), FaultKind::gpu_lost, rank7, false);
  faults.detected(lost, at_ms(30'250), "health_check");
  faults.recovered(lost, at_ms(31'500), "rank removed");
  faults.at(lost).requests_affected = 12;
  faults.at(lost).detail["why"] = "<script>alert('x')</script>";
  FaultTarget link;
  link.type = FaultTarget::Type::link;
  link.text = "nic0 <-> leaf2";
  faults.hit(at_ms(70'000), FaultKind::link_flap, link, true);

  RunReport r = report_over_100_s();
  r.faults = faults.to_json();
  const std::string html = html_of(r);
  const std::string section = between(html, "<h2>Faults</h2>", "<h3>Impact</h3>");  // the table, not the impact
  ASSERT_FALSE(section.empty());
  EXPECT_EQ(count(section, "<tr>"), 3u) << "a header and one row per fault";
  const std::string first = between(section, "<tr><td>1</td>", "</tr>");
  for (const char* want : {"gpu_lost", "normal rank 7", "timed", "30.000", "30.250", "health_check", "0.250", "31.500",
                           "rank removed", "1.500", "<td>12</td>"}) {
    EXPECT_NE(first.find(want), std::string::npos) << want << " in " << first;
  }
  EXPECT_NE(first.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos) << first;
  const std::string second = between(section, "<tr><td>2</td>", "</tr>");
  for (const char* want : {"link_flap", "nic0 &lt;-&gt; leaf2", "random", "70.000", "not detected", "not recovered"}) {
    EXPECT_NE(second.find(want), std::string::npos) << want << " in " << second;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<-> leaf2"), std::string::npos);

  const std::string throughput = between(html, "Throughput: input</text>", "</svg>");
  EXPECT_EQ(count(throughput, "<g><title>fault "), 2u) << "both hits are marked on the throughput plot";
  EXPECT_NE(throughput.find("fault 1: gpu_lost on normal rank 7 at 30.000 s"), std::string::npos);
  EXPECT_NE(throughput.find("fault 2: link_flap on nic0 &lt;-&gt; leaf2 at 70.000 s"), std::string::npos);
  EXPECT_EQ(count(between(html, "Requests queued and running</text>", "</svg>"), "<g><title>fault "), 2u);
}

// The headline figures come first, as tables with units; the raw figures are at the end, folded.
TEST(HtmlReport, TheHeadlineTableComesFirst) {
  RunReport r = report_over_100_s();
  r.ttft = {.count = 10, .mean = 900, .p50 = 512.5, .p90 = 1234.5, .p99 = 80900, .quantiles = {}};
  r.sim_time_s = 100;
  r.input_tokens = 80'898'800;  // 808988 tokens/s
  r.output_tokens = 123'400;
  r.kv_hits.lookup_tokens = 1000;
  r.kv_hits.gpu_tokens = 776;
  r.kv_hits.remote_tokens = 124;
  r.checks.push_back({"requests_accounted", {true, "all"}});
  r.checks.push_back({"kv_memory_baseline", CheckResult::skip("the run stopped at its time limit")});
  const std::string html = html_of(r);
  const auto headline = html.find("<h2>Headline</h2>");
  ASSERT_NE(headline, std::string::npos);
  EXPECT_LT(headline, html.find("<svg")) << "before every plot";
  EXPECT_LT(headline, html.find("<h2>Checks</h2>"));
  const std::string table = between(html, "<h2>Headline</h2>", "<h2>");
  for (const char* want : {"<td>TTFT</td><td>512</td><td>1.23 k</td><td>80.9 k</td><td>900</td>", "809 k input tok/s",
                           "1.23 k output tok/s", "GPU 77.6%, Grace 0.0%, remote 12.4%", "1 pass",
                           "<span class=\"skipped\">1 skipped</span>"}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << " in " << table;
  }
  EXPECT_GT(html.find("<details><summary>All figures"), html.rfind("<svg")) << "the raw figures come last";
}

TEST(SiFigure, ThreeDigitsAndAPrefix) {
  EXPECT_EQ(si_figure(808988), "809 k");
  EXPECT_EQ(si_figure(1234567), "1.23 M");
  EXPECT_EQ(si_figure(999999), "1 M");
  EXPECT_EQ(si_figure(999.7), "1 k");
  EXPECT_EQ(si_figure(12.5), "12.5");
  EXPECT_EQ(si_figure(0), "0");
  EXPECT_EQ(si_figure(0.0042), "0.0042");
  EXPECT_EQ(si_figure(-2500), "-2.5 k");
}

// Ticks at round values with SI prefixes, the axis topped at a round value; a NaN is a gap in the line.
TEST(SvgChart, RoundTicksAndGaps) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::string svg = SvgChart::lines({{"input", {0, 1, 2, 3, 4}, {808988, nan, 500000, 600000, nan}}},
                                          {"Throughput", "simulated s", "tokens/s", std::nullopt, false});
  EXPECT_EQ(svg.find("808988"), std::string::npos);
  for (const char* tick : {">0</text>", ">200 k</text>", ">800 k</text>", ">1 M</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick << " in " << svg;
  }
  EXPECT_EQ(count(svg, "<polyline"), 2u) << "one line before the gap, one after";
  const std::string heat = SvgChart::heatmap({"gpu0 dep rank 0", "gpu8 prefill 0"}, {{0.0, 1.0}, {0.5, 0.5}}, 2.0,
                                             {"GPU", "s", "GPU", std::nullopt, false});
  EXPECT_NE(heat.find("class=\"colour-bar\""), std::string::npos);
  EXPECT_NE(heat.find(">100%</text>"), std::string::npos);
  EXPECT_NE(heat.find("gpu8 prefill 0"), std::string::npos);
}

// Each fault's impact: the 60 s before its hit against the 60 s after. Hand figures: output 100 tok/s
// before the hit at 60 s and 40 after (-60%); queued 2 before, 5 after (+150%); running 8 throughout.
TEST(HtmlReport, ShowsEachFaultsImpact) {
  RunReport r;
  for (int s = 1; s <= 150; ++s) {
    r.timeline.t_s.push_back(s);
    r.timeline.output_tokens_per_s.push_back(s <= 60 ? 100 : 40);
    r.timeline.input_tokens_per_s.push_back(0);
    r.timeline.waiting.push_back(s <= 60 ? 2 : 5);
    r.timeline.running.push_back(8);
  }
  r.faults = nlohmann::json::array({{{"kind", "gpu_lost"}, {"target", "normal rank 7"}, {"hit_s", 60.0}},
                                    {{"kind", "straggler"}, {"target", "normal rank 1"}, {"hit_s", 150.0}}});
  const std::string impact = between(html_of(r), "<h3>Impact</h3>", "</table>");
  ASSERT_FALSE(impact.empty());
  EXPECT_NE(impact.find("<td>1</td><td>gpu_lost on normal rank 7</td><td>100</td><td>40</td><td>-60.0%</td>"
                        "<td>2</td><td>5</td><td>+150.0%</td><td>8</td><td>8</td><td>+0.0%</td>"),
            std::string::npos) << impact;
  EXPECT_NE(impact.find("<td>2</td><td>straggler on normal rank 1</td><td>40</td><td>-</td><td>-</td>"), std::string::npos)
      << "a hit at the run's end has no after";
  EXPECT_EQ(html_of(report_over_100_s()).find("<h3>Impact</h3>"), std::string::npos);
}

// outputs.html_smoothing_s: the plots over time as a trailing moving average. Output alternates 0 and
// 100 tok/s each second: raw, the chart reaches 100; over 2 s every full window means 50, so the axis tops
// at 50 and the title says so.
TEST(HtmlReport, SmoothsTheSeriesOverTimeWhenAsked) {
  RunReport r;
  for (int s = 1; s <= 20; ++s) {
    r.timeline.t_s.push_back(s);
    r.timeline.output_tokens_per_s.push_back(s % 2 == 0 ? 100 : 0);
    r.timeline.input_tokens_per_s.push_back(0);
    r.timeline.waiting.push_back(0);
    r.timeline.running.push_back(1);
  }
  const auto output_chart = [&](const HtmlOptions& o) {
    std::ostringstream out;
    write_html_report(out, r, o);
    return between(out.str(), "Throughput: output", "</svg>");
  };
  const std::string raw = output_chart({});
  EXPECT_NE(raw.find(">100</text>"), std::string::npos) << raw;
  const std::string smooth = output_chart({.smoothing_s = 2});
  EXPECT_EQ(smooth.rfind("Throughput: output (2 s moving average)</text>", 0), 0u) << smooth.substr(0, 80);
  EXPECT_NE(smooth.find(">50</text>"), std::string::npos);
  EXPECT_EQ(smooth.find(">100</text>"), std::string::npos) << "no mean of two seconds reaches 100";
}

TEST(HtmlReport, SaysInOneLineWhenThereWereNoFaults) {
  const std::string html = html_of(report_over_100_s());
  EXPECT_EQ(between(html, "<h2>Faults</h2>", "<h2>"), "<h2>Faults</h2>\n<p>No faults in this run.</p>\n");
  EXPECT_EQ(html.find("stroke-dasharray"), std::string::npos);
}

TEST(HtmlReport, ReadsFaultsWithFieldsLeftOut) {
  RunReport r = report_over_100_s();
  r.faults = nlohmann::json::array({{{"kind", "router_restart"}, {"hit_s", 12.5}, {"detected_s", 13.0}}, "not a fault"});
  const std::string section = between(html_of(r), "<h2>Faults</h2>", "<h3>Impact</h3>");
  EXPECT_EQ(count(section, "<tr>"), 2u);
  for (const char* want : {"router_restart", "12.500", "13.000", "0.500", "not recovered"}) {
    EXPECT_NE(section.find(want), std::string::npos) << want << " in " << section;
  }
}

TEST(RequestLatency, TtftTpotAndE2eInTheUnitAsked) {
  engine::RequestTiming t;
  t.arrival = at_ms(1'000);
  t.first_token = at_ms(1'250);
  t.finished = at_ms(2'250);
  t.output_tokens = 11;  // ten after the first, over one second
  const RequestLatency ms = request_latency(t, 1e3);
  ASSERT_TRUE(ms.ttft && ms.tpot && ms.e2e);
  EXPECT_DOUBLE_EQ(*ms.ttft, 250.0);
  EXPECT_DOUBLE_EQ(*ms.tpot, 100.0);
  EXPECT_DOUBLE_EQ(*ms.e2e, 1'250.0);
  const RequestLatency s = request_latency(t, 1.0);
  EXPECT_DOUBLE_EQ(*s.ttft, 0.25);
  EXPECT_DOUBLE_EQ(*s.tpot, 0.1);

  t.output_tokens = 1;
  EXPECT_FALSE(request_latency(t, 1.0).tpot) << "one token has no time per output token";
  t.finished.reset();
  const RequestLatency unfinished = request_latency(t, 1.0);
  EXPECT_TRUE(unfinished.ttft);
  EXPECT_FALSE(unfinished.e2e);
  EXPECT_FALSE(unfinished.tpot);
}

TEST(EventLogObserver, SeesEveryRecordAndLeavesTheHashAlone) {
  rt::EventLog watched, plain;
  std::vector<std::string> seen;
  watched.set_observer([&](rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields,
                           rt::Severity severity) {
    seen.push_back(std::to_string(t.ns()) + " " + std::string(source) + " " + std::string(kind) + " " + fields.dump() +
                   " " + std::string(rt::to_string(severity)));
  });
  for (rt::EventLog* log : {&watched, &plain}) {
    log->record(at_ms(1), "gpu3", "gpu_lost", {{"xid", 79}}, rt::Severity::warning);
    log->record(at_ms(2), "router", "routed", {{"request", 1}});
  }
  EXPECT_EQ(watched.hash(), plain.hash());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "1000000 gpu3 gpu_lost {\"xid\":79} warning");
  EXPECT_EQ(seen[1], "2000000 router routed {\"request\":1} info");
}

}  // namespace report_output_test
}  // namespace nvl::emu
