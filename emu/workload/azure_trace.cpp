#include "emu/workload/azure_trace.h"

#include <charconv>
#include <string_view>

#include "emu/rt/errors.h"
#include "emu/workload/block_namespace.h"
#include "emu/workload/hash_chain_builder.h"
#include "emu/workload/trace_file.h"

namespace nvl::emu {
namespace {

constexpr std::string_view kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens";
// Far above any real context (the trace's largest is 7,437 tokens), low enough that one line's unique block
// hashes stay a few MB (an absurd count would hang the loader).

bool parse_int(std::string_view s, std::int64_t& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "YYYY-MM-DD HH:MM:SS[.fraction]" to ns since the epoch; false when malformed.
bool parse_timestamp(std::string_view s, std::int64_t& ns_out) {
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':') return false;
  std::int64_t y, mo, d, h, mi, sec;
  if (!parse_int(s.substr(0, 4), y) || !parse_int(s.substr(5, 2), mo) || !parse_int(s.substr(8, 2), d) ||
      !parse_int(s.substr(11, 2), h) || !parse_int(s.substr(14, 2), mi) || !parse_int(s.substr(17, 2), sec)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
  if (y < 1970 || y > 2200) return false;  // nanoseconds since 1970 must fit in 64 bits
  std::int64_t frac_ns = 0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20) return false;
    std::int64_t scale = 100'000'000;
    for (char c : s.substr(20)) {
      if (c < '0' || c > '9') return false;
      frac_ns += (c - '0') * scale;  // digits past nanoseconds add nothing
      scale /= 10;
    }
  }
  ns_out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
  ns_out = ns_out * 1'000'000'000 + frac_ns;
  return true;
}

}  // namespace

Workload load_azure_trace(const std::filesystem::path& path, const LoadOptions& options) {
  const std::string file = path.string();
  const std::string text = read_trace_file(path);
  Workload w;
  w.source = file;
  std::size_t pos = 0;
  std::size_t line_no = 0;
  std::int64_t first_ns = 0;
  std::int64_t previous_ns = 0;
  while (pos < text.size() && w.sessions.size() < options.max_sessions) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = "line " + std::to_string(line_no);
    if (line_no == 1) {
      if (line != kHeader) throw rt::InputError(file, where, "expected the header '" + std::string(kHeader) + "'");
      continue;
    }
    if (line.empty()) continue;
    const std::size_t c1 = line.find(',');
    const std::size_t c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
    if (c2 == std::string_view::npos || line.find(',', c2 + 1) != std::string_view::npos) {
      throw rt::InputError(file, where, "expected 3 comma-separated fields: TIMESTAMP,ContextTokens,GeneratedTokens");
    }
    std::int64_t t_ns = 0;
    std::int64_t context = 0;
    std::int64_t generated = 0;
    if (!parse_timestamp(line.substr(0, c1), t_ns)) {
      throw rt::InputError(file, where + ": TIMESTAMP", "expected 'YYYY-MM-DD HH:MM:SS.fffffff', got '" +
                                                            std::string(line.substr(0, c1)) + "'");
    }
    if (!parse_int(line.substr(c1 + 1, c2 - c1 - 1), context) || context < kMinPromptTokens || context > kMaxRequestTokens) {
      throw rt::InputError(file, where + ": ContextTokens",
                           "expected an integer from 1 to " + std::to_string(kMaxRequestTokens) + ", got '" +
                                                                std::string(line.substr(c1 + 1, c2 - c1 - 1)) + "'");
    }
    if (!parse_int(line.substr(c2 + 1), generated) || generated < 0 || generated > kMaxRequestTokens) {
      throw rt::InputError(file, where + ": GeneratedTokens",
                           "expected an integer from 0 to " + std::to_string(kMaxRequestTokens) + ", got '" + std::string(line.substr(c2 + 1)) + "'");
    }
    if (w.sessions.empty()) first_ns = previous_ns = t_ns;
    if (t_ns < previous_ns) throw rt::InputError(file, where + ": TIMESTAMP", "timestamps must not decrease");
    previous_ns = t_ns;

    const BlockNamespace ns("azure/" + path.filename().string() + "/" + std::to_string(line_no));
    HashChainBuilder chain;
    const std::int64_t blocks = (context + kAzureBlockTokens - 1) / kAzureBlockTokens;
    for (std::int64_t b = 0; b < blocks; ++b) chain.push(ns.hash(static_cast<std::uint64_t>(b)));
    Request r;
    r.prompt_tokens = context;
    r.output_tokens = generated;
    r.block_hashes = chain.snapshot();
    Session s;
    s.labels = {"azure", where, ""};
    s.block_size_tokens = kAzureBlockTokens;
    s.recorded_start = rt::Time::from_ns(t_ns - first_ns);
    s.requests.push_back(std::move(r));
    w.sessions.push_back(std::move(s));
  }
  if (w.sessions.empty()) throw rt::InputError(file, "", "no requests after the header");
  return w;
}

}  // namespace nvl::emu
