#include "emu/rt/time.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace nvl::rt {

Duration from_seconds(double s) {
  const double n = s * 1e9;
  if (!std::isfinite(n) || std::fabs(n) > 9.2e18) {
    throw std::invalid_argument("duration out of range: " + std::to_string(s) + " s");
  }
  return ns(std::llround(n));
}

std::string to_string(Duration d) {
  const std::int64_t v = d.ns();
  const double a = std::fabs(static_cast<double>(v));
  char buf[48];
  if (a < 1e3) {
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(v));
  } else if (a < 1e6) {
    std::snprintf(buf, sizeof buf, "%.4g us", static_cast<double>(v) / 1e3);
  } else if (a < 1e9) {
    std::snprintf(buf, sizeof buf, "%.4g ms", static_cast<double>(v) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g s", static_cast<double>(v) / 1e9);
  }
  return buf;
}

std::string to_string(Time t) {
  const std::int64_t v = t.ns();
  const char* sign = v < 0 ? "-" : "";
  const std::uint64_t a = v < 0 ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%09llu", sign, static_cast<unsigned long long>(a / 1'000'000'000ULL),
                static_cast<unsigned long long>(a % 1'000'000'000ULL));
  return buf;
}

std::ostream& operator<<(std::ostream& os, Duration d) { return os << to_string(d); }
std::ostream& operator<<(std::ostream& os, Time t) { return os << to_string(t); }

}  // namespace nvl::rt
