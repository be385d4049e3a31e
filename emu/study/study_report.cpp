#include "emu/study/study_report.h"

#include <ostream>

#include "emu/report/html_escape.h"
#include "emu/report/svg_chart.h"

namespace nvl::emu {

namespace {

std::string spread_text(const SeedSpread& s) {
  if (s.runs == 0) return "n/a";
  if (s.runs == 1 || s.min == s.max) return study_figure(s.mean);
  return study_figure(s.mean) + " (" + study_figure(s.min) + " to " + study_figure(s.max) + ")";
}

// The assumptions, one per line: what the runs were and what their numbers rest on.
std::vector<std::string> assumptions(const StudyResults& r) {
  const StudySpec& s = r.spec();
  std::vector<std::string> out;
  std::string set;
  for (const std::string& o : s.set) set += (set.empty() ? "" : ", ") + o;
  out.push_back("Base scenario `" + s.scenario + "`" + (set.empty() ? "" : " with " + set) + ".");
  for (const StudyVariant& v : s.variants) {
    std::string vs;
    for (const std::string& o : v.set) vs += (vs.empty() ? "" : ", ") + o;
    const std::string scenario = v.scenario.empty() ? "the base scenario" : "scenario `" + v.scenario + "`";
    out.push_back("Variant " + v.name + ": " + scenario + (vs.empty() ? " as it is" : " with " + vs) + ".");
  }
  out.push_back("Swept: `" + s.x_key + "` (" + s.x_label + "); " + std::to_string(s.seeds.size()) +
                " seeds per point, figures as mean (min to max over the seeds).");
  out.push_back("Timing: " + r.calibration() + ".");
  return out;
}

}  // namespace

void write_study_markdown(std::ostream& out, const StudyResults& r, const std::string& command) {
  const StudySpec& s = r.spec();
  out << "# Study: " << s.name << "\n\n**Question.** " << s.question << "\n\n**Answer.** " << r.answer() << "\n";
  out << "## Results\n\n| variant | " << s.x_label << " |";
  for (const std::string& m : s.all_metrics()) out << ' ' << m << " |";
  out << " drained |\n|---|---|";
  for (std::size_t i = 0; i < s.all_metrics().size(); ++i) out << "---|";
  out << "---|\n";
  for (std::size_t v = 0; v < s.variants.size(); ++v) {
    for (std::size_t x = 0; x < s.x_values.size(); ++x) {
      out << "| " << s.variants[v].name << " | " << axis_value_text(s.x_values[x]) << " |";
      for (const std::string& m : s.all_metrics()) out << ' ' << spread_text(r.spread(m, v, x)) << " |";
      out << ' ' << (r.drained(v, x) ? "yes" : "no") << " |\n";
    }
  }
  out << "\n## Assumptions\n\n";
  for (const std::string& a : assumptions(r)) out << "- " << a << '\n';
  out << "\n## Rerun\n\n```\n" << command << "\n```\n";
}

void write_study_html(std::ostream& out, const StudyResults& r, const std::string& command) {
  const StudySpec& s = r.spec();
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nvl72emu study: " << html_escape(s.name)
      << "</title>\n<style>body{font-family:sans-serif;margin:20px;max-width:1500px}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}svg{margin:6px;border:1px solid #eee}</style>"
         "</head><body>\n<h1>Study: "
      << html_escape(s.name) << "</h1>\n<p><b>Question.</b> " << html_escape(s.question) << "</p>\n<p><b>Answer.</b></p><pre>"
      << html_escape(r.answer()) << "</pre>\n<h2>Figures</h2>\n";
  for (const std::string& m : s.all_metrics()) {
    std::vector<ChartSeries> lines;
    for (std::size_t v = 0; v < s.variants.size(); ++v) {
      ChartSeries line{s.variants[v].name, s.x_values, {}};
      for (std::size_t x = 0; x < s.x_values.size(); ++x) {
        const SeedSpread sp = r.spread(m, v, x);
        line.y.push_back(sp.mean);
        line.low.push_back(sp.min);
        line.high.push_back(sp.max);
      }
      lines.push_back(std::move(line));
    }
    out << SvgChart::lines(lines, {m + " (mean; band: min to max over " + std::to_string(s.seeds.size()) + " seeds)", s.x_label, m,
                                   std::nullopt, false});
  }
  out << "<h2>Assumptions</h2><ul>\n";
  for (const std::string& a : assumptions(r)) out << "<li>" << html_escape(a) << "</li>\n";
  out << "</ul>\n<h2>Rerun</h2><pre>" << html_escape(command) << "</pre>\n</body></html>\n";
}

}  // namespace nvl::emu
