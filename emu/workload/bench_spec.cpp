#include "emu/workload/bench_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "emu/rt/errors.h"

namespace nvl::emu {
namespace {

constexpr const char* kForm = "expected bench:isl=N,osl=M[,prefix=P][,isl_spread=F][,seed=S]";
// Far above any model's context, low enough that a prompt's block ids stay a few MB.
constexpr std::int64_t kMaxTokens = 1 << 24;

std::int64_t parse_tokens(const std::string& spec, const std::string& key, const std::string& value,
                          std::int64_t min) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v < min || v > kMaxTokens) {
    throw rt::InputError(spec, key, "expected an integer from " + std::to_string(min) + " to " +
                                        std::to_string(kMaxTokens) + ", got '" + value + "'");
  }
  return v;
}

}  // namespace

std::int64_t BenchSpec::isl_low() const {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(static_cast<double>(isl) * (1 - isl_spread))));
}

std::int64_t BenchSpec::isl_high() const {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(isl) * (1 + isl_spread)));
}

BenchSpec parse_bench_spec(const std::string& spec) {
  if (!spec.starts_with(kBenchPrefix)) throw rt::InputError(spec, "", kForm);
  BenchSpec b;
  std::optional<std::int64_t> isl, osl;
  const std::string params = spec.substr(kBenchPrefix.size());
  std::size_t pos = 0;
  while (pos <= params.size()) {
    const std::size_t comma = params.find(',', pos);
    const std::string item = params.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? params.size() + 1 : comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw rt::InputError(spec, item, std::string("expected key=value: ") + kForm);
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "isl") {
      isl = parse_tokens(spec, key, value, 1);
    } else if (key == "osl") {
      osl = parse_tokens(spec, key, value, 1);
    } else if (key == "prefix") {
      b.prefix = parse_tokens(spec, key, value, 0);
    } else if (key == "isl_spread") {
      double f = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), f);
      if (ec != std::errc() || p != value.data() + value.size() || !(f >= 0 && f < 1)) {
        throw rt::InputError(spec, key, "expected a number in [0, 1), got '" + value + "'");
      }
      b.isl_spread = f;
    } else if (key == "seed") {
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), b.seed);
      if (ec != std::errc() || p != value.data() + value.size()) {
        throw rt::InputError(spec, key, "expected a non-negative integer, got '" + value + "'");
      }
    } else {
      throw rt::InputError(spec, key, "unknown parameter (expected isl, osl, prefix, isl_spread or seed)");
    }
  }
  if (!isl) throw rt::InputError(spec, "isl", std::string("missing: ") + kForm);
  if (!osl) throw rt::InputError(spec, "osl", std::string("missing: ") + kForm);
  b.isl = *isl;
  b.osl = *osl;
  if (b.isl_high() > kMaxTokens) {
    throw rt::InputError(spec, "isl_spread", "the longest input would exceed " + std::to_string(kMaxTokens) + " tokens");
  }
  return b;
}

}  // namespace nvl::emu
