#include "emu/report/trace_recorder.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <tuple>
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
  const auto it = string_ids_.find(s);
  if (it != string_ids_.end()) return it->second;
  strings_.emplace_back(s);
  const int id = static_cast<int>(strings_.size() - 1);
  string_ids_.emplace(strings_.back(), id);
  return id;
}

int TraceRecorder::process(std::string_view name) {
  const auto it = process_ids_.find(name);
  if (it != process_ids_.end()) return it->second;
  process_names_.push_back(intern(name));
  const int pid = static_cast<int>(process_names_.size());
  process_ids_.emplace(std::string(name), pid);
  return pid;
}

int TraceRecorder::thread(int process, std::string_view name) {
  NameIds& ids = thread_ids_[process];
  const auto it = ids.find(name);
  if (it != ids.end()) return it->second;
  thread_names_.emplace_back(process, intern(name));
  const int tid = static_cast<int>(thread_names_.size());
  ids.emplace(std::string(name), tid);
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

void TraceRecorder::span(int process, int thread, std::string_view name, rt::Time start, rt::Time end,
                         std::string args) {
  if (!admit(start)) return;
  int args_id = -1;
  if (!args.empty()) {
    args_.push_back(std::move(args));
    args_id = static_cast<int>(args_.size() - 1);
  }
  events_.push_back(Event{'X', process, thread, intern(name), -1, args_id, start.ns(), (end - start).ns(), 0});
}

void TraceRecorder::instant(int process, std::string_view name, rt::Time t, std::string_view detail) {
  if (!admit(t)) return;
  events_.push_back(Event{'i', process, 0, intern(name), intern(detail), -1, t.ns(), 0, 0});
}

void TraceRecorder::counter(int process, std::string_view name, rt::Time t, double value) {
  if (!admit(t)) return;
  events_.push_back(Event{'C', process, 0, intern(name), -1, -1, t.ns(), 0, value});
}

TraceSummary TraceRecorder::summary() const {
  return TraceSummary{events_.size(), outside_window_, over_cap_, opts_.start_s, opts_.start_s + opts_.window_s};
}

void TraceRecorder::write(std::ostream& out) const {
  // Formatted into a buffer with std::to_chars (the output of printf's "%.3f", as the stream's
  // std::fixed with precision 3 gave) and each name quoted once: a trace holds up to max_events events.
  std::vector<std::string> quoted_strings;
  quoted_strings.reserve(strings_.size());
  for (const std::string& s : strings_) quoted_strings.push_back(quoted(s));
  std::string buf;
  constexpr std::size_t kFlushBytes = 1 << 20;
  buf.reserve(kFlushBytes + 4096);
  const auto append_number = [&buf](auto value, auto... format) {
    char digits[64];
    const auto r = std::to_chars(digits, digits + sizeof digits, value, format...);
    buf.append(digits, r.ptr);
  };
  const auto append_us = [&](std::int64_t ns) {
    append_number(static_cast<double>(ns) / kNsPerUs, std::chars_format::fixed, 3);  // microseconds to the ns
  };
  const auto quoted_name = [&](int id) -> const std::string& { return quoted_strings[static_cast<std::size_t>(id)]; };

  buf += "{\"traceEvents\": [\n";
  bool first = true;
  const auto sep = [&] {
    if (!first) buf += ",\n";
    first = false;
    if (buf.size() >= kFlushBytes) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  };
  for (std::size_t p = 0; p < process_names_.size(); ++p) {
    sep();
    buf += R"({"ph": "M", "name": "process_name", "pid": )";
    append_number(p + 1);
    buf += R"(, "args": {"name": )";
    buf += quoted_name(process_names_[p]);
    buf += "}}";
  }
  for (std::size_t t = 0; t < thread_names_.size(); ++t) {
    sep();
    buf += R"({"ph": "M", "name": "thread_name", "pid": )";
    append_number(thread_names_[t].first);
    buf += R"(, "tid": )";
    append_number(t + 1);
    buf += R"(, "args": {"name": )";
    buf += quoted_name(thread_names_[t].second);
    buf += "}}";
  }
  // Spans are recorded as they end: a link's transfers end out of their start order.
  std::vector<std::size_t> order(events_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    const Event& x = events_[a];
    const Event& y = events_[b];
    return std::tie(x.process, x.thread, x.ts_ns) < std::tie(y.process, y.thread, y.ts_ns);
  });
  for (const std::size_t i : order) {
    const Event& e = events_[i];
    sep();
    buf += R"({"ph": ")";
    buf += e.phase;
    buf += R"(", "pid": )";
    append_number(e.process);
    buf += R"(, "tid": )";
    append_number(e.thread);
    buf += R"(, "name": )";
    buf += quoted_name(e.name);
    buf += R"(, "ts": )";
    append_us(e.ts_ns);
    switch (e.phase) {
      case 'X':
        buf += R"(, "dur": )";
        append_us(e.dur_ns);
        if (e.args >= 0) {
          buf += R"(, "args": )";
          buf += args_[static_cast<std::size_t>(e.args)];
        }
        break;
      case 'i':
        buf += R"(, "s": "g", "args": {"detail": )";
        buf += quoted_name(e.detail);
        buf += "}";
        break;
      default:
        buf += R"(, "args": {"value": )";
        append_number(e.value, std::chars_format::fixed, 3);
        buf += "}";
        break;
    }
    buf += "}";
  }
  const TraceSummary s = summary();
  buf += "\n], \"displayTimeUnit\": \"ms\", \"otherData\": ";
  buf += nlohmann::json{{"events", s.events},
                        {"outside_window", s.outside_window},
                        {"over_cap", s.over_cap},
                        {"window_start_s", s.window_start_s},
                        {"window_end_s", s.window_end_s}}
             .dump();
  buf += "}\n";
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace nvl::emu
