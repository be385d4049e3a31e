#pragma once
// The structured event log. Components append records (time, source, kind, severity, fields); the log
// keeps a running 64-bit hash of every record, so two runs of the same scenario and seed can be compared
// by one number. Records can be kept in memory, or streamed, as JSON lines.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/rt/time.h"

namespace nvl::rt {

// Any error-severity record fails a simulation run (the harness checks error_count()).
enum class Severity { debug, info, warning, error };
std::string_view to_string(Severity s);

// Told of each record as it is appended (the harness turns faults and transfers into trace events).
// Observing never changes the log or its hash.
using RecordObserver = std::function<void(Time t, std::string_view source, std::string_view kind,
                                          const nlohmann::json& fields, Severity severity)>;

// One field of a record_counts record.
struct CountField {
  std::string_view name;
  std::int64_t value;
};

class EventLog {
 public:
  void record(Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields,
              Severity severity = Severity::info);
  // An info record of integer fields, for the hot path (a run delivers millions of token batches):
  // hashed from its time and values without building its JSON, which is made only when lines are kept
  // or streamed. Observers are not told: whoever records it already sees the event.
  void record_counts(Time t, std::string_view source, std::string_view kind, std::initializer_list<CountField> fields);

  std::uint64_t hash() const { return hash_; }
  // 16 lower-case hex digits.
  std::string hash_hex() const;
  std::uint64_t count() const { return count_; }
  std::uint64_t error_count() const { return errors_; }
  // The first error-severity record, as its JSON line.
  const std::optional<std::string>& first_error() const { return first_error_; }

  // Keep every record as a JSON line (off by default: only the hash and counts are kept).
  void keep_records(bool keep) { keep_ = keep; }
  const std::vector<std::string>& lines() const { return lines_; }
  void write_jsonl(std::ostream& out) const;
  // Also write every record to `out` as a JSON line as it is appended (null: stop), so a long run's log
  // need not be held in memory.
  void stream_to(std::ostream* out) { out_ = out; }
  // One observer (empty: none).
  void set_observer(RecordObserver observer) { observer_ = std::move(observer); }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
  std::uint64_t count_ = 0;
  std::uint64_t errors_ = 0;
  bool keep_ = false;
  std::optional<std::string> first_error_;
  std::vector<std::string> lines_;
  std::ostream* out_ = nullptr;
  RecordObserver observer_;

  bool wants_lines() const { return keep_ || out_ != nullptr; }
  void emit(std::string line);
};

}  // namespace nvl::rt
