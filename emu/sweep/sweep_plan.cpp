#include "emu/sweep/sweep_plan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "emu/rt/errors.h"

namespace nvl::emu {

namespace {

constexpr std::uint64_t kMaxSeedsPerSweep = 100'000;  // a typo like 1..1000000000 should not fork forever

std::uint64_t parse_seed(const std::string& spec, std::string_view text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw rt::InputError("--seeds", spec, "expected a seed S or a range A..B of non-negative integers");
  }
  return v;
}

}  // namespace

std::vector<std::string> SweepPoint::overrides() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : settings) out.push_back(key + "=" + value);
  out.push_back("seed=" + std::to_string(seed));
  return out;
}

std::string SweepPoint::folder_name() const {
  std::string name;
  for (const auto& [key, value] : settings) name += key + "=" + value + "_";
  name += "seed=" + std::to_string(seed);
  for (char& c : name) {
    const bool safe = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '=' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  return name;
}

SweepAxis parse_vary(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw rt::InputError("--vary", spec, "expected key.path=v1,v2,...");
  SweepAxis axis;
  axis.key = spec.substr(0, eq);
  if (axis.key == "seed") throw rt::InputError("--vary", spec, "vary the seed with --seeds A..B");
  std::size_t begin = eq + 1;
  for (;;) {
    const auto comma = spec.find(',', begin);
    std::string value = spec.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (value.empty()) throw rt::InputError("--vary", spec, "empty value (expected key.path=v1,v2,...)");
    axis.values.push_back(std::move(value));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return axis;
}

std::vector<std::uint64_t> parse_seeds(const std::string& spec) {
  const auto dots = spec.find("..");
  const std::uint64_t first = parse_seed(spec, std::string_view(spec).substr(0, dots));
  const std::uint64_t last = dots == std::string::npos ? first : parse_seed(spec, std::string_view(spec).substr(dots + 2));
  if (last < first) throw rt::InputError("--seeds", spec, "the range A..B must have A <= B");
  if (last - first >= kMaxSeedsPerSweep) {
    throw rt::InputError("--seeds", spec, "more than " + std::to_string(kMaxSeedsPerSweep) + " seeds");
  }
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t i = 0; i <= last - first; ++i) seeds.push_back(first + i);  // no wrap at the top seed
  return seeds;
}

std::vector<SweepPoint> plan_sweep(const std::vector<SweepAxis>& axes, const std::vector<std::uint64_t>& seeds) {
  std::set<std::string> keys;
  for (const auto& a : axes) {
    if (!keys.insert(a.key).second) throw rt::InputError("--vary", a.key, "varied twice (give one --vary per key)");
  }
  std::vector<SweepPoint> points{SweepPoint{}};
  for (const auto& axis : axes) {
    std::vector<SweepPoint> next;
    for (const auto& p : points) {
      for (const auto& v : axis.values) {
        SweepPoint q = p;
        q.settings.emplace_back(axis.key, v);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  std::vector<SweepPoint> runs;
  std::set<std::string> folders;  // two runs must not write one report
  for (const auto& p : points) {
    for (const std::uint64_t s : seeds) {
      SweepPoint q = p;
      q.seed = s;
      if (!folders.insert(q.folder_name()).second) {
        throw rt::InputError("--vary", q.folder_name(), "two runs would share this output folder (a repeated value?)");
      }
      runs.push_back(std::move(q));
    }
  }
  return runs;
}

}  // namespace nvl::emu
