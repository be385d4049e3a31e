#include "emu/report/trace_recorder.h"

#include <iomanip>
#include <ostream>

#include <nlohmann/json.hpp>

namespace nvl::emu {

namespace {

constexpr double kNsPerUs = 1e3;

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

TraceRecorder::TraceRecorder(TraceOptions opts)
    : opts_(opts),
      start_(rt::Time::zero() + rt::from_seconds(opts.start_s)),
      end_(rt::Time::zero() + rt::from_seconds(opts.start_s + opts.window_s)) {}

int TraceRecorder::intern(std::string_view s) {
  const auto it = string_ids_.find(std::string(s));
  if (it != string_ids_.end()) return it->second;
  strings_.emplace_back(s);
  const int id = static_cast<int>(strings_.size() - 1);
  string_ids_.emplace(strings_.back(), id);
  return id;
}

int TraceRecorder::process(std::string_view name) {
  const auto it = process_ids_.find(std::string(name));
  if (it != process_ids_.end()) return it->second;
  process_names_.push_back(intern(name));
  const int pid = static_cast<int>(process_names_.size());
  process_ids_.emplace(std::string(name), pid);
  return pid;
}

int TraceRecorder::thread(int process, std::string_view name) {
  const std::string key = std::to_string(process) + "/" + std::string(name);
  const auto it = thread_ids_.find(key);
  if (it != thread_ids_.end()) return it->second;
  thread_names_.emplace_back(process, intern(name));
  const int tid = static_cast<int>(thread_names_.size());
  thread_ids_.emplace(key, tid);
  return tid;
}

bool TraceRecorder::admit(rt::Time t) {
  if (!in_window(t)) {
    ++outside_window_;
    return false;
  }
  if (events_.size() >= opts_.max_events) {
    ++over_cap_;
    return false;
  }
  return true;
}

void TraceRecorder::span(int process, int thread, std::string_view name, rt::Time start, rt::Time end) {
  if (!admit(start)) return;
  events_.push_back(Event{'X', process, thread, intern(name), -1, start.ns(), (end - start).ns(), 0});
}

void TraceRecorder::instant(int process, std::string_view name, rt::Time t, std::string_view detail) {
  if (!admit(t)) return;
  events_.push_back(Event{'i', process, 0, intern(name), intern(detail), t.ns(), 0, 0});
}

void TraceRecorder::counter(int process, std::string_view name, rt::Time t, double value) {
  if (!admit(t)) return;
  events_.push_back(Event{'C', process, 0, intern(name), -1, t.ns(), 0, value});
}

TraceSummary TraceRecorder::summary() const {
  return TraceSummary{events_.size(), outside_window_, over_cap_, opts_.start_s, opts_.start_s + opts_.window_s};
}

void TraceRecorder::write(std::ostream& out) const {
  const auto flags = out.flags();
  const auto precision = out.precision();
  out << std::fixed << std::setprecision(3);  // microseconds to the nanosecond
  out << "{\"traceEvents\": [\n";
  bool first = true;
  const auto sep = [&] {
    out << (first ? "" : ",\n");
    first = false;
  };
  for (std::size_t p = 0; p < process_names_.size(); ++p) {
    sep();
    out << R"({"ph": "M", "name": "process_name", "pid": )" << p + 1 << R"(, "args": {"name": )"
        << quoted(strings_[static_cast<std::size_t>(process_names_[p])]) << "}}";
  }
  for (std::size_t t = 0; t < thread_names_.size(); ++t) {
    sep();
    out << R"({"ph": "M", "name": "thread_name", "pid": )" << thread_names_[t].first << R"(, "tid": )" << t + 1
        << R"(, "args": {"name": )" << quoted(strings_[static_cast<std::size_t>(thread_names_[t].second)]) << "}}";
  }
  for (const Event& e : events_) {
    sep();
    const std::string& name = strings_[static_cast<std::size_t>(e.name)];
    out << R"({"ph": ")" << e.phase << R"(", "pid": )" << e.process << R"(, "tid": )" << e.thread
        << R"(, "name": )" << quoted(name) << R"(, "ts": )" << static_cast<double>(e.ts_ns) / kNsPerUs;
    switch (e.phase) {
      case 'X':
        out << R"(, "dur": )" << static_cast<double>(e.dur_ns) / kNsPerUs;
        break;
      case 'i':
        out << R"(, "s": "g", "args": {"detail": )" << quoted(strings_[static_cast<std::size_t>(e.detail)]) << "}";
        break;
      default:
        out << R"(, "args": {"value": )" << e.value << "}";
        break;
    }
    out << "}";
  }
  const TraceSummary s = summary();
  out << "\n], \"displayTimeUnit\": \"ms\", \"otherData\": "
      << nlohmann::json{{"events", s.events},
                        {"outside_window", s.outside_window},
                        {"over_cap", s.over_cap},
                        {"window_start_s", s.window_start_s},
                        {"window_end_s", s.window_end_s}}
             .dump()
      << "}\n";
  out.flags(flags);
  out.precision(precision);
}

}  // namespace nvl::emu
