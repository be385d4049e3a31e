#include "emu/report/si_figure.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

namespace nvl::emu {

std::string si_figure(double v) {
  constexpr std::array<std::pair<double, const char*>, 4> kPrefixes = {
      {{1e12, " T"}, {1e9, " G"}, {1e6, " M"}, {1e3, " k"}}};
  const double a = std::abs(v);
  char text[32];
  for (const auto& [scale, prefix] : kPrefixes) {
    if (a >= scale * 0.9995) {  // what %.3g rounds up to 1000 takes the next prefix
      std::snprintf(text, sizeof text, "%.3g%s", v / scale, prefix);
      return text;
    }
  }
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

}  // namespace nvl::emu
