#pragma once
// Inline SVG charts built as plain strings (no script, no network): line charts with axes, ticks and
// a legend, and heatmaps with one row per item. The HTML report embeds them.
#include <optional>
#include <string>
#include <vector>

namespace nvl::emu {

struct ChartSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::optional<double> y_max;  // unset: the data's maximum
  bool log_x = false;           // for latency CDFs spanning decades
};

class SvgChart {
 public:
  static std::string lines(const std::vector<ChartSeries>& series, const ChartOptions& opts);
  // values[row][column] in [0, 1], columns evenly spread over [0, x_end]; colour from white to dark blue.
  static std::string heatmap(const std::vector<std::string>& rows, const std::vector<std::vector<double>>& values,
                             double x_end, const ChartOptions& opts);
};

}  // namespace nvl::emu
