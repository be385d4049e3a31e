#pragma once
// Collects a run's timeline as Chrome trace events (the JSON that ui.perfetto.dev and chrome://tracing
// open): a process per GPU (a thread per stream) with a span per kernel, graph (step) or copy; a
// process per link that carried a transfer, with a span per transfer; instants for faults and warnings;
// counters for link utilisation. Spans may carry arguments (a step's pool, rank and batch). Bounded: only events starting inside the window [start_s, start_s +
// window_s) of simulated time are kept, at most max_events of them; summary() says what was cut.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "emu/rt/time.h"

namespace nvl::emu {

struct TraceOptions {
  double start_s = 0;
  double window_s = 30;
  std::uint64_t max_events = 500'000;
};

struct TraceSummary {
  std::uint64_t events = 0;             // kept (spans, instants and counters; track names not counted)
  std::uint64_t outside_window = 0;     // seen but outside the window
  std::uint64_t over_cap = 0;           // inside the window but past max_events
  double window_start_s = 0;
  double window_end_s = 0;
};

class TraceRecorder {
 public:
  explicit TraceRecorder(TraceOptions opts);

  // A track group ("gpu 3", "link rack0/tray0/gpu1 nvlink up") by name; created on first use.
  int process(std::string_view name);
  int thread(int process, std::string_view name);
  // Whether an event starting at t would be kept by the window (the cap aside).
  bool in_window(rt::Time t) const { return t >= start_ && t < end_; }
  // After the window nothing more can be kept: callers may stop observing.
  bool past_window(rt::Time now) const { return now >= end_; }

  // `args`: the span's arguments as a JSON object's text ("{...}", shown in the viewer's detail pane), or empty.
  void span(int process, int thread, std::string_view name, rt::Time start, rt::Time end, std::string args = {});
  void instant(int process, std::string_view name, rt::Time t, std::string_view detail);
  void counter(int process, std::string_view name, rt::Time t, double value);

  TraceSummary summary() const;
  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...the summary...}}; the events of each
  // track (thread, or process for instants and counters) in time order.
  void write(std::ostream& out) const;

 private:
  struct Event {
    char phase;  // 'X' span, 'i' instant, 'C' counter
    int process;
    int thread;
    int name;    // interned
    int detail;  // interned, -1: none
    int args;    // a span's: index into args_, -1: none
    std::int64_t ts_ns;
    std::int64_t dur_ns;
    double value;
  };
  // Names are looked up by string_view without building a std::string: spans arrive by the thousand.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using NameIds = std::unordered_map<std::string, int, NameHash, std::equal_to<>>;

  bool admit(rt::Time t);
  int intern(std::string_view s);

  TraceOptions opts_;
  rt::Time start_;
  rt::Time end_;
  std::vector<Event> events_;
  std::vector<std::string> strings_;
  std::vector<std::string> args_;
  NameIds string_ids_;
  std::vector<int> process_names_;                      // pid -> interned name
  NameIds process_ids_;
  std::vector<std::pair<int, int>> thread_names_;       // (pid, interned name); tid = index + 1
  std::unordered_map<int, NameIds> thread_ids_;         // pid -> name -> tid
  std::uint64_t outside_window_ = 0;
  std::uint64_t over_cap_ = 0;
};

}  // namespace nvl::emu
