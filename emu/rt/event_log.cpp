#include "emu/rt/event_log.h"

#include <cstdio>
#include <ostream>

#include "emu/rt/hash.h"

namespace nvl::rt {

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::debug: return "debug";
    case Severity::info: return "info";
    case Severity::warning: return "warning";
    case Severity::error: return "error";
  }
  return "unknown";
}

namespace {

std::string json_line(Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields,
                      Severity severity) {
  nlohmann::json rec = {{"t_ns", t.ns()}, {"source", source}, {"kind", kind}, {"severity", to_string(severity)}};
  if (!fields.is_null() && !fields.empty()) rec["fields"] = fields;
  return rec.dump();
}

}  // namespace

void EventLog::record(Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields,
                      Severity severity) {
  std::string line = json_line(t, source, kind, fields, severity);
  hash_ = fnv1a64(line, hash_);
  hash_ = fnv1a64("\n", hash_);
  ++count_;
  if (severity == Severity::error) {
    ++errors_;
    if (!first_error_) first_error_ = line;
  }
  if (wants_lines()) emit(std::move(line));
  if (observer_) observer_(t, source, kind, fields, severity);
}

void EventLog::record_counts(Time t, std::string_view source, std::string_view kind,
                             std::initializer_list<CountField> fields) {
  hash_ = splitmix64(hash_ ^ static_cast<std::uint64_t>(t.ns()));
  hash_ = fnv1a64(kind, fnv1a64(source, hash_));
  for (const CountField& f : fields) hash_ = splitmix64(hash_ ^ static_cast<std::uint64_t>(f.value));
  ++count_;
  if (!wants_lines()) return;
  nlohmann::json values = nlohmann::json::object();
  for (const CountField& f : fields) values[std::string(f.name)] = f.value;
  emit(json_line(t, source, kind, values, Severity::info));
}

void EventLog::emit(std::string line) {
  if (out_ != nullptr) *out_ << line << '\n';
  if (keep_) lines_.push_back(std::move(line));
}

std::string EventLog::hash_hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash_));
  return buf;
}

void EventLog::write_jsonl(std::ostream& out) const {
  for (const auto& l : lines_) out << l << '\n';
}

}  // namespace nvl::rt
