#pragma once
// How the HTML report prints a figure: an SI prefix and 3 significant digits, so that tables and chart
// ticks read "809 k" and "1.23 M", not "808988" and "1.23e+06".
#include <string>

namespace nvl::emu {

// 808988 -> "809 k", 1234567 -> "1.23 M", 12.5 -> "12.5", 0.0042 -> "0.0042", 0 -> "0".
std::string si_figure(double v);

}  // namespace nvl::emu
