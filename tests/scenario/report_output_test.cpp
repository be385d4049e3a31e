// The report outputs: the Chrome trace keeps only its window and cap and says what it cut; the SVG
// charts and the HTML page are self-contained and show the data they are given.
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/report/html_report.h"
#include "emu/report/svg_chart.h"
#include "emu/report/trace_recorder.h"
#include "emu/rt/event_log.h"

namespace nvl::emu {
namespace {

rt::Time at_ms(std::int64_t ms) { return rt::Time::zero() + rt::ms(ms); }

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
  EXPECT_NE(html.find("FAIL"), std::string::npos);
  EXPECT_NE(html.find("the first token delivered twice"), std::string::npos);
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

}  // namespace
}  // namespace nvl::emu
