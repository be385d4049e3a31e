#include "emu/report/html_fault_section.h"

#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>

#include "emu/report/html_escape.h"
#include "emu/report/si_figure.h"

namespace nvl::emu {

namespace {

// Longer details are cut in the cell; the whole is in its tooltip.
constexpr std::size_t kDetailChars = 120;

std::vector<nlohmann::json> entries(const nlohmann::json& faults) {
  std::vector<nlohmann::json> out;
  if (!faults.is_array()) return out;
  for (const auto& f : faults) {
    if (f.is_object()) out.push_back(f);
  }
  return out;
}

std::optional<double> number(const nlohmann::json& f, const char* key) {
  const auto it = f.find(key);
  if (it == f.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string text(const nlohmann::json& f, const char* key) {
  const auto it = f.find(key);
  if (it == f.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// Simulated seconds to the millisecond; shorter spans (not zero) in scientific notation.
std::string seconds(double s) {
  std::ostringstream os;
  if (s != 0 && std::abs(s) < 1e-3) {
    os << std::scientific << std::setprecision(2) << s;
  } else {
    os << std::fixed << std::setprecision(3) << s;
  }
  return os.str();
}

std::string seconds_or(const std::optional<double>& s, const std::string& absent) {
  return s ? seconds(*s) : absent;
}

// The span from the hit, as written, or worked out from the two times.
std::optional<double> since_hit(const nlohmann::json& f, const char* span_key, const char* at_key) {
  if (auto span = number(f, span_key)) return span;
  const auto hit = number(f, "hit_s"), at = number(f, at_key);
  if (hit && at) return *at - *hit;
  return std::nullopt;
}

// A value of a detail: nested objects (e.g. the experts moved) one level flat, as "key value, ...".
std::string detail_value(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_object()) return v.dump();
  std::string out;
  for (const auto& [key, inner] : v.items()) {
    if (!out.empty()) out += ", ";
    out += key + " " + (inner.is_string() ? inner.get<std::string>() : inner.dump());
  }
  return out;
}

std::string detail_text(const nlohmann::json& f) {
  const auto it = f.find("detail");
  if (it == f.end() || it->is_null() || (it->is_object() && it->empty())) return "";
  if (!it->is_object()) return detail_value(*it);
  std::string out;
  for (const auto& [key, value] : it->items()) {
    if (!out.empty()) out += "; ";
    out += key + ": " + detail_value(value);
  }
  return out;
}

bool is_random(const nlohmann::json& f) {
  const auto it = f.find("random");
  return it != f.end() && it->is_boolean() && it->get<bool>();
}

// The first `n` bytes of `s`, not splitting a UTF-8 character.
std::string cut(const std::string& s, std::size_t n) {
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string cell(const std::string& s) { return "<td>" + html_escape(s) + "</td>"; }

std::string numbered_name(std::size_t i, const nlohmann::json& f) {
  std::string name = "fault " + std::to_string(i + 1) + ": " + text(f, "kind");
  if (const std::string target = text(f, "target"); !target.empty()) name += " on " + target;
  return name;
}

}  // namespace

std::string fault_section_html(const nlohmann::json& faults) {
  const std::vector<nlohmann::json> all = entries(faults);
  if (all.empty()) return "<p>No faults in this run.</p>\n";
  std::string out =
      "<p>Times in simulated seconds. The dashed red lines on the charts over time mark the hits, numbered as "
      "here.</p>\n<table><tr><th>#</th><th>kind</th><th>target</th><th>trigger</th><th>hit</th><th>detected</th>"
      "<th>detected by</th><th>detection delay</th><th>recovered</th><th>recovery</th><th>time to recover</th>"
      "<th>requests affected</th><th>detail</th></tr>\n";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const nlohmann::json& f = all[i];
    const std::optional<double> detected = number(f, "detected_s"), recovered = number(f, "recovered_s");
    out += "<tr>" + cell(std::to_string(i + 1)) + cell(text(f, "kind")) + cell(text(f, "target"));
    out += cell(is_random(f) ? "random" : "timed");
    out += cell(seconds_or(number(f, "hit_s"), "?"));
    out += cell(seconds_or(detected, "not detected"));
    out += cell(detected ? text(f, "detected_by") : "");
    out += cell(detected ? seconds_or(since_hit(f, "detection_delay_s", "detected_s"), "") : "");
    out += cell(seconds_or(recovered, "not recovered"));
    out += cell(recovered ? text(f, "recovery") : "");
    out += cell(recovered ? seconds_or(since_hit(f, "recovery_time_s", "recovered_s"), "") : "");
    out += cell(text(f, "requests_affected"));
    const std::string detail = detail_text(f);
    if (detail.size() > kDetailChars) {
      out += "<td title=\"" + html_escape(detail) + "\">" + html_escape(cut(detail, kDetailChars)) + "&hellip;</td>";
    } else {
      out += cell(detail);
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  return out;
}

namespace {

// Mean of `values` over the samples whose interval ends in (from, to]; nullopt when none does.
std::optional<double> mean_between(const Timeline& t, const std::vector<double>& values, double from, double to) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.t_s.size() && i < values.size(); ++i) {
    if (t.t_s[i] > from && t.t_s[i] <= to) {
      sum += values[i];
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

std::string impact_cells(const Timeline& t, const std::vector<double>& values, double hit, double window_s) {
  const auto before = mean_between(t, values, hit - window_s, hit), after = mean_between(t, values, hit, hit + window_s);
  const auto shown = [](const std::optional<double>& v) { return v ? si_figure(*v) : std::string("-"); };
  std::string change = "-";
  if (before && after && *before != 0) {
    std::ostringstream os;
    os << std::showpos << std::fixed << std::setprecision(1) << 100 * (*after - *before) / *before << '%';
    change = os.str();
  }
  return cell(shown(before)) + cell(shown(after)) + cell(change);
}

}  // namespace

std::string fault_impact_html(const nlohmann::json& faults, const Timeline& timeline, double window_s) {
  const std::vector<nlohmann::json> all = entries(faults);
  if (all.empty()) return "";
  std::ostringstream head;
  head << "<h3>Impact</h3>\n<p>Means over the " << window_s
       << " simulated s before each hit and after it (timeline samples; - where the run has none).</p>\n"
          "<table><tr><th>#</th><th>fault</th><th>output tok/s before</th><th>after</th><th>change</th>"
          "<th>queued before</th><th>after</th><th>change</th><th>running before</th><th>after</th><th>change</th></tr>\n";
  std::string out = head.str();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto hit = number(all[i], "hit_s");
    if (!hit) continue;
    out += "<tr>" + cell(std::to_string(i + 1)) + cell(text(all[i], "kind") + " on " + text(all[i], "target")) +
           impact_cells(timeline, timeline.output_tokens_per_s, *hit, window_s) +
           impact_cells(timeline, timeline.waiting, *hit, window_s) +
           impact_cells(timeline, timeline.running, *hit, window_s) + "</tr>\n";
  }
  return out + "</table>\n";
}

std::vector<ChartMarker> fault_markers(const nlohmann::json& faults) {
  const std::vector<nlohmann::json> all = entries(faults);
  std::vector<ChartMarker> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto hit = number(all[i], "hit_s");
    if (!hit) continue;
    out.push_back(ChartMarker{*hit, std::to_string(i + 1), numbered_name(i, all[i]) + " at " + seconds(*hit) + " s"});
  }
  return out;
}

}  // namespace nvl::emu
