#pragma once
// Strict reading of one JSON object from a profile or scenario file. Each getter consumes a key;
// finish() rejects keys nobody asked for; every problem is an InputError naming the file, the key path
// and what was expected. Calibrated numbers are {"value": x, "source": "..."} so each carries its origin.
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/rt/time.h"

namespace nvl::rt {

// What a number read from a file must be; each rule names itself in the error message.
enum class NumberRule {
  any,             // any finite number
  non_negative,    // >= 0
  positive,        // > 0
  fraction,        // in (0, 1]
  positive_whole,  // a whole number >= 1
};

// The longest time or duration an input may give: a year, so that every sum of them stays a valid
// rt::Duration (int64 nanoseconds reach 292 years).
inline constexpr double kMaxSeconds = 365.0 * 24 * 3600;

class JsonReader {
 public:
  // `path` is where `object` is in the file: a key path ("requests[3]", "" at the top) or a line
  // ("line 12") for line-oriented files. `object` must outlive the reader.
  JsonReader(const nlohmann::json& object, std::string file, std::string path = "");
  // Reads and parses a whole file; its top level must be an object.
  static nlohmann::json parse_file(const std::filesystem::path& file);

  bool has(std::string_view key) const;
  std::string string(std::string_view key);
  bool boolean(std::string_view key);
  // An integer in [min, max].
  std::int64_t integer(std::string_view key, std::int64_t min = 0, std::int64_t max = INT64_MAX);
  double number(std::string_view key, NumberRule rule = NumberRule::non_negative);
  // A time or duration in seconds: a number as `rule` says, at most kMaxSeconds.
  double seconds(std::string_view key, NumberRule rule = NumberRule::non_negative);
  // A sourced number {"value": x, "source": "..."}.
  double sourced(std::string_view key, NumberRule rule = NumberRule::non_negative);
  // A sourced duration given in nanoseconds.
  Duration sourced_ns(std::string_view key);
  JsonReader object(std::string_view key);
  // An array of objects.
  std::vector<JsonReader> objects(std::string_view key);
  // An array, as it is (for callers that walk mixed entries themselves).
  const nlohmann::json& array(std::string_view key);
  // Any value, as it is (for keys that take several forms).
  const nlohmann::json& value(std::string_view key) { return get(key); }
  // An array of non-negative integers (ids).
  std::vector<std::uint64_t> unsigned_list(std::string_view key);

  // The keys of this object, in the file's order (for maps keyed by name).
  std::vector<std::string> keys() const;

  // Throws for the first key that was never read.
  void finish() const;
  [[noreturn]] void fail(std::string_view key, const std::string& problem) const;
  const std::string& file() const { return file_; }
  // The key path of `key` in this object, e.g. "cluster.racks".
  std::string where(std::string_view key) const;

 private:
  const nlohmann::json& get(std::string_view key);

  const nlohmann::json* object_;
  std::string file_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace nvl::rt
