#include "emu/live/prometheus_text.h"

#include <charconv>
#include <cmath>

namespace nvl::emu::live {

std::string python_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  // Python's repr: positional from 1e-4 up to 1e16, exponent outside; the shortest digits either way.
  const double a = std::fabs(v);
  const bool positional = a == 0 || (a >= 1e-4 && a < 1e16);
  const auto [end, ec] =
      std::to_chars(buf, buf + sizeof buf, v, positional ? std::chars_format::fixed : std::chars_format::scientific);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::vector<double> one_two_five_buckets(std::int64_t max) {
  std::vector<double> b;
  for (double decade = 1;; decade *= 10) {
    for (const double m : {1.0, 2.0, 5.0}) {
      if (m * decade > static_cast<double>(max)) return b;
      b.push_back(m * decade);
    }
  }
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void PrometheusText::line(std::string_view name, const PromLabels& labels, const std::string& value) {
  out_.append(name);
  if (!labels.empty()) {
    out_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_.append(labels[i].first).append("=\"");
      for (const char c : labels[i].second) {  // the format's three escapes
        if (c == '\n') {
          out_ += "\\n";
          continue;
        }
        if (c == '\\' || c == '"') out_ += '\\';
        out_ += c;
      }
      out_ += '"';
    }
    out_ += '}';
  }
  out_.append(" ").append(value).append("\n");
}

void PrometheusText::sample(std::string_view name, const PromLabels& labels, std::uint64_t value) {
  line(name, labels, std::to_string(value));
}

void PrometheusText::sample(std::string_view name, const PromLabels& labels, std::int64_t value) {
  line(name, labels, std::to_string(value));
}

void PrometheusText::sample(std::string_view name, const PromLabels& labels, double value) {
  line(name, labels, python_float(value));
}

void PrometheusText::histogram(std::string_view name, const PromLabels& labels, const std::vector<double>& bounds,
                               const std::vector<std::uint64_t>& counts, std::uint64_t total, double sum) {
  const std::string base(name);
  PromLabels with_le = labels;
  with_le.emplace_back("le", "");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    cumulative += counts[i];
    with_le.back().second = python_float(bounds[i]);
    sample(base + "_bucket", with_le, cumulative);
  }
  with_le.back().second = "+Inf";
  sample(base + "_bucket", with_le, total);
  sample(base + "_sum", labels, sum);
  sample(base + "_count", labels, total);
}

}  // namespace nvl::emu::live
