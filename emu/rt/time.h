#pragma once
// Simulated and real time as signed 64-bit nanoseconds. Never floating seconds in the kernel.
#include <compare>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>

namespace nvl::rt {

// A span of time in nanoseconds. May be negative (a difference of two times).
class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration nanoseconds(std::int64_t ns) { return Duration(ns); }
  static constexpr Duration max() { return Duration(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ns() const { return ns_; }
  // For reports only: a floating view of the same value.
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr double microseconds() const { return static_cast<double>(ns_) * 1e-3; }

  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return Duration(ns_ + o.ns_); }
  constexpr Duration operator-(Duration o) const { return Duration(ns_ - o.ns_); }
  constexpr Duration operator-() const { return Duration(-ns_); }
  constexpr Duration operator*(std::int64_t k) const { return Duration(ns_ * k); }
  constexpr Duration operator/(std::int64_t k) const { return Duration(ns_ / k); }
  constexpr Duration& operator+=(Duration o) { ns_ += o.ns_; return *this; }
  constexpr Duration& operator-=(Duration o) { ns_ -= o.ns_; return *this; }

 private:
  constexpr explicit Duration(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

// A point in time: nanoseconds since the start of the run (virtual) or of the runtime (real).
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ns(std::int64_t ns) { return Time(ns); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ns() const { return ns_; }
  constexpr Duration since_start() const { return Duration::nanoseconds(ns_); }
  // This time plus d, held at Time::max() instead of overflowing (deadlines of "wait forever").
  constexpr Time saturating_add(Duration d) const {
    if (d.ns() > 0 && ns_ > std::numeric_limits<std::int64_t>::max() - d.ns()) return max();
    return Time(ns_ + d.ns());
  }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Duration d) const { return Time(ns_ + d.ns()); }
  constexpr Time operator-(Duration d) const { return Time(ns_ - d.ns()); }
  constexpr Duration operator-(Time o) const { return Duration::nanoseconds(ns_ - o.ns_); }
  constexpr Time& operator+=(Duration d) { ns_ += d.ns(); return *this; }

 private:
  constexpr explicit Time(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_ = 0;
};

constexpr Duration ns(std::int64_t v) { return Duration::nanoseconds(v); }
constexpr Duration us(std::int64_t v) { return Duration::nanoseconds(v * 1'000); }
constexpr Duration ms(std::int64_t v) { return Duration::nanoseconds(v * 1'000'000); }
constexpr Duration sec(std::int64_t v) { return Duration::nanoseconds(v * 1'000'000'000); }
// Rounds a floating amount of seconds (from a model or a profile) to whole nanoseconds.
Duration from_seconds(double s);

// Human units: "250 ns", "12.5 us", "3.25 ms", "1.5 s".
std::string to_string(Duration d);
// A fixed-width stamp for logs: seconds with nanosecond digits, "12.000345678".
std::string to_string(Time t);
std::ostream& operator<<(std::ostream& os, Duration d);
std::ostream& operator<<(std::ostream& os, Time t);

namespace literals {
constexpr Duration operator""_ns(unsigned long long v) { return ns(static_cast<std::int64_t>(v)); }
constexpr Duration operator""_us(unsigned long long v) { return us(static_cast<std::int64_t>(v)); }
constexpr Duration operator""_ms(unsigned long long v) { return ms(static_cast<std::int64_t>(v)); }
constexpr Duration operator""_s(unsigned long long v) { return sec(static_cast<std::int64_t>(v)); }
}  // namespace literals

}  // namespace nvl::rt
