#pragma once
// Inline SVG charts built as plain strings (no script, no network): line charts with axes, ticks, a
// legend, optional bands (spreads) and vertical markers (events such as fault hits), and heatmaps with
// one row per item. Lines of a few points mark each point.
// The HTML report embeds them.
#include <optional>
#include <string>
#include <vector>

namespace nvl::emu {

struct ChartSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  // A band drawn behind the line from low to high at each x (a spread over seeds); empty: none.
  std::vector<double> low = {};
  std::vector<double> high = {};
};

// A vertical line at x across a line chart, with a short label above it and a longer tooltip.
struct ChartMarker {
  double x = 0;
  std::string label;
  std::string tooltip;
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::optional<double> y_max;  // unset: the data's maximum
  bool log_x = false;           // for latency CDFs spanning decades
  std::vector<ChartMarker> markers = {};  // line charts: those outside the data's x range are left out
  std::string marker_legend = {};         // what the markers are, in the legend
};

class SvgChart {
 public:
  static std::string lines(const std::vector<ChartSeries>& series, const ChartOptions& opts);
  // values[row][column] in [0, 1], columns evenly spread over [0, x_end]; colour from white to dark blue.
  static std::string heatmap(const std::vector<std::string>& rows, const std::vector<std::vector<double>>& values,
                             double x_end, const ChartOptions& opts);
};

}  // namespace nvl::emu
