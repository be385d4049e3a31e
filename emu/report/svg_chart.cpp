#include "emu/report/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "emu/report/html_escape.h"
#include "emu/report/si_figure.h"

namespace nvl::emu {

namespace {

constexpr double kWidth = 720, kHeight = 300;
constexpr double kLeft = 70, kRight = 150, kTop = 30, kBottom = 45;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr int kTicks = 5;
constexpr std::size_t kMaxPoints = 1'000;  // per series: enough for a smooth line, small pages
constexpr std::size_t kMarkedPoints = 12;  // lines of at most this many points show a dot at each
constexpr std::array<const char*, 8> kColours = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                 "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr const char* kMarkerColour = "#b00";

// The tick step for a span: 1, 2 or 5 times a power of ten, giving at most kTicks intervals.
double nice_step(double span) {
  const double raw = span / kTicks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

void open_svg(std::ostringstream& os, const ChartOptions& opts) {
  os << std::fixed << std::setprecision(1);
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
     << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  os << "<text x=\"" << kWidth / 2 << "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">"
     << html_escape(opts.title) << "</text>\n";
  os << "<text x=\"" << kLeft + kPlotW / 2 << "\" y=\"" << kHeight - 6 << "\" text-anchor=\"middle\">"
     << html_escape(opts.x_label) << "</text>\n";
  os << "<text transform=\"translate(14," << kTop + kPlotH / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
     << html_escape(opts.y_label) << "</text>\n";
  os << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotW << "\" height=\"" << kPlotH
     << "\" fill=\"none\" stroke=\"#888\"/>\n";
}

// Grid lines and labels at round values of [0, y_max].
void y_ticks(std::ostringstream& os, double y_max, double step) {
  for (double v = 0; v <= y_max * (1 + 1e-9); v += step) {
    const double y = kTop + kPlotH - kPlotH * v / y_max;
    os << "<line x1=\"" << kLeft - 4 << "\" x2=\"" << kLeft + kPlotW << "\" y1=\"" << y << "\" y2=\"" << y
       << "\" stroke=\"#eee\"/><text x=\"" << kLeft - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << si_figure(v)
       << "</text>\n";
  }
}

void x_tick(std::ostringstream& os, double x, double v) {
  os << "<text x=\"" << x << "\" y=\"" << kTop + kPlotH + 14 << "\" text-anchor=\"middle\">" << si_figure(v) << "</text>\n";
}

}  // namespace

std::string SvgChart::lines(const std::vector<ChartSeries>& series, const ChartOptions& opts) {
  std::ostringstream os;
  open_svg(os, opts);
  double x_min = opts.log_x ? 1e300 : 0, x_max = 0, y_max = 0;
  bool any = false;
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (opts.log_x && s.x[i] <= 0) continue;
      x_min = std::min(x_min, s.x[i]);
      x_max = std::max(x_max, s.x[i]);
      if (std::isnan(s.y[i])) continue;
      any = true;
      y_max = std::max(y_max, s.y[i]);
      if (i < s.high.size() && !std::isnan(s.high[i])) y_max = std::max(y_max, s.high[i]);
    }
  }
  if (!any) {
    os << "<text x=\"" << kLeft + kPlotW / 2 << "\" y=\"" << kTop + kPlotH / 2
       << "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n</svg>\n";
    return os.str();
  }
  if (opts.y_max) y_max = *opts.y_max;
  if (y_max <= 0) y_max = 1;
  const double y_step = nice_step(y_max);
  if (!opts.y_max) y_max = y_step * std::ceil(y_max / y_step * (1 - 1e-9));  // the top at a round value
  if (x_max <= x_min) x_max = x_min + 1;
  const auto px = [&](double x) {
    if (opts.log_x) return kLeft + kPlotW * (std::log10(x) - std::log10(x_min)) / (std::log10(x_max) - std::log10(x_min));
    return kLeft + kPlotW * (x - x_min) / (x_max - x_min);
  };
  const auto py = [&](double y) { return kTop + kPlotH - kPlotH * std::clamp(y / y_max, 0.0, 1.0); };
  y_ticks(os, y_max, y_step);
  if (opts.log_x) {  // 1, 2 and 5 times each power of ten in range
    for (double decade = std::pow(10.0, std::floor(std::log10(x_min))); decade <= x_max; decade *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m * decade >= x_min * (1 - 1e-9) && m * decade <= x_max * (1 + 1e-9)) x_tick(os, px(m * decade), m * decade);
      }
    }
  } else {
    const double step = nice_step(x_max - x_min);
    for (double v = std::ceil(x_min / step) * step; v <= x_max * (1 + 1e-9); v += step) x_tick(os, px(v), v);
  }
  bool marked = false;
  for (const ChartMarker& m : opts.markers) {
    if (m.x < x_min || m.x > x_max || (opts.log_x && m.x <= 0)) continue;
    marked = true;
    const double x = px(m.x);
    os << "<g><title>" << html_escape(m.tooltip) << "</title><line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << kTop
       << "\" y2=\"" << kTop + kPlotH << "\" stroke=\"" << kMarkerColour
       << "\" stroke-width=\"1\" stroke-dasharray=\"4,3\"/><text x=\"" << x << "\" y=\"" << kTop - 3
       << "\" text-anchor=\"middle\" font-size=\"9\" fill=\"" << kMarkerColour << "\">" << html_escape(m.label)
       << "</text></g>\n";
  }
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const std::size_t n = std::min(s.x.size(), s.y.size());
    const std::size_t stride = std::max<std::size_t>(1, (n + kMaxPoints - 1) / kMaxPoints);
    const char* colour = kColours[k % kColours.size()];
    if (s.low.size() == n && s.high.size() == n) {
      // The band: along the highs, back along the lows (points without both are left out).
      std::ostringstream band;
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isnan(s.low[i]) && !std::isnan(s.high[i])) band << px(s.x[i]) << ',' << py(s.high[i]) << ' ';
      }
      for (std::size_t i = n; i-- > 0;) {
        if (!std::isnan(s.low[i]) && !std::isnan(s.high[i])) band << px(s.x[i]) << ',' << py(s.low[i]) << ' ';
      }
      os << "<polygon fill=\"" << colour << "\" fill-opacity=\"0.18\" stroke=\"none\" points=\"" << band.str() << "\"/>\n";
    }
    if (n <= kMarkedPoints) {
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(s.y[i]) || (opts.log_x && s.x[i] <= 0)) continue;
        os << "<circle cx=\"" << px(s.x[i]) << "\" cy=\"" << py(s.y[i]) << "\" r=\"3\" fill=\"" << colour << "\"/>\n";
      }
    }
    // A NaN value is a gap (an interval with nothing to show): the line stops there and starts again after.
    bool open = false;
    for (std::size_t i = 0; i < n; i += stride) {
      if (opts.log_x && s.x[i] <= 0) continue;
      if (std::isnan(s.y[i])) {
        if (open) os << "\"/>\n";
        open = false;
        continue;
      }
      if (!open) os << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" points=\"";
      open = true;
      os << px(s.x[i]) << ',' << py(s.y[i]) << ' ';
    }
    if (open) os << "\"/>\n";
    const double ly = kTop + 10 + 16 * static_cast<double>(k);
    os << "<line x1=\"" << kLeft + kPlotW + 10 << "\" x2=\"" << kLeft + kPlotW + 28 << "\" y1=\"" << ly << "\" y2=\""
       << ly << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/><text x=\"" << kLeft + kPlotW + 32 << "\" y=\""
       << ly + 4 << "\">" << html_escape(s.name) << "</text>\n";
  }
  if (marked && !opts.marker_legend.empty()) {
    const double ly = kTop + 10 + 16 * static_cast<double>(series.size());
    os << "<line x1=\"" << kLeft + kPlotW + 10 << "\" x2=\"" << kLeft + kPlotW + 28 << "\" y1=\"" << ly << "\" y2=\""
       << ly << "\" stroke=\"" << kMarkerColour << "\" stroke-dasharray=\"4,3\"/><text x=\"" << kLeft + kPlotW + 32
       << "\" y=\"" << ly + 4 << "\">" << html_escape(opts.marker_legend) << "</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

std::string SvgChart::heatmap(const std::vector<std::string>& rows, const std::vector<std::vector<double>>& values,
                              double x_end, const ChartOptions& opts) {
  std::ostringstream os;
  open_svg(os, opts);
  std::size_t columns = 0;
  for (const auto& r : values) columns = std::max(columns, r.size());
  if (rows.empty() || columns == 0) {
    os << "<text x=\"" << kLeft + kPlotW / 2 << "\" y=\"" << kTop + kPlotH / 2
       << "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n</svg>\n";
    return os.str();
  }
  // Columns beyond the plot's pixel width are averaged together.
  const std::size_t cells = std::min<std::size_t>(columns, static_cast<std::size_t>(kPlotW / 4));
  const double cell_w = kPlotW / static_cast<double>(cells);
  const double cell_h = kPlotH / static_cast<double>(rows.size());
  for (std::size_t r = 0; r < rows.size() && r < values.size(); ++r) {
    const auto& v = values[r];
    for (std::size_t c = 0; c < cells; ++c) {
      const std::size_t from = c * columns / cells, to = std::max(from + 1, (c + 1) * columns / cells);
      double sum = 0;
      std::size_t n = 0;
      for (std::size_t i = from; i < to && i < v.size(); ++i, ++n) sum += v[i];
      const double share = n > 0 ? std::clamp(sum / static_cast<double>(n), 0.0, 1.0) : 0.0;
      const int shade = static_cast<int>(std::lround(255 * (1 - share)));
      os << "<rect x=\"" << kLeft + cell_w * static_cast<double>(c) << "\" y=\""
         << kTop + cell_h * static_cast<double>(r) << "\" width=\"" << cell_w + 0.3 << "\" height=\"" << cell_h + 0.3
         << "\" fill=\"rgb(" << shade << ',' << shade << ",255)\"/>";
    }
    os << '\n';
  }
  const std::size_t label_every = std::max<std::size_t>(1, rows.size() / 12);
  for (std::size_t r = 0; r < rows.size(); r += label_every) {
    os << "<text x=\"" << kLeft - 6 << "\" y=\"" << kTop + cell_h * (static_cast<double>(r) + 0.5) + 4
       << "\" text-anchor=\"end\">" << html_escape(rows[r]) << "</text>\n";
  }
  if (x_end > 0) {
    const double step = nice_step(x_end);
    for (double v = 0; v <= x_end * (1 + 1e-9); v += step) x_tick(os, kLeft + kPlotW * v / x_end, v);
  }
  // The colour bar: 0% at the bottom, 100% at the top, as the cells are shaded.
  const double bar_x = kLeft + kPlotW + 14, bar_w = 14;
  os << "<defs><linearGradient id=\"heat\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\"><stop offset=\"0\" stop-color=\"rgb(255,255,255)\"/>"
        "<stop offset=\"1\" stop-color=\"rgb(0,0,255)\"/></linearGradient></defs>"
     << "<rect class=\"colour-bar\" x=\"" << bar_x << "\" y=\"" << kTop << "\" width=\"" << bar_w << "\" height=\"" << kPlotH
     << "\" fill=\"url(#heat)\" stroke=\"#888\"/>\n";
  for (int pct : {0, 25, 50, 75, 100}) {
    os << "<text x=\"" << bar_x + bar_w + 4 << "\" y=\"" << kTop + kPlotH - kPlotH * pct / 100.0 + 4 << "\">" << pct << "%</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace nvl::emu
