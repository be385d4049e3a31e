#include "emu/report/benchmark_recorder.h"

namespace nvl::emu {

namespace {
constexpr double kMsPerS = 1e3;
}  // namespace

void BenchmarkRecorder::on_submit(engine::RequestId id, rt::Time sent, bool warmup) {
  if (warmup) {
    ++warmup_;
    return;
  }
  open_[id].sent = sent;
}

void BenchmarkRecorder::on_tokens(engine::RequestId id, std::int64_t count, rt::Time now) {
  const auto it = open_.find(id);
  if (it == open_.end() || count <= 0) return;
  Open& o = it->second;
  if (o.last_delivery) {
    // A delivery of several tokens (MTP) spreads its wait over them, as sglang's client counts it.
    const double gap_ms = (now - *o.last_delivery).seconds() * kMsPerS / static_cast<double>(count);
    o.itl_ms.emplace_back(gap_ms, static_cast<std::uint64_t>(count));
  }
  o.last_delivery = now;
}

void BenchmarkRecorder::on_done(const engine::RequestTiming& t, rt::Time now) {
  const auto it = open_.find(t.id);
  if (it == open_.end()) return;
  BenchmarkSample s;
  s.sent = it->second.sent;
  s.over = now;
  s.input_tokens = t.prompt_tokens;
  s.output_tokens = t.output_tokens;
  if (t.failure.empty()) {
    s.first_token = t.first_token;
    s.finished = t.finished;
    for (const auto& [gap, n] : it->second.itl_ms) itl_ms_.add(gap, n);
  }
  samples_.push_back(std::move(s));
  open_.erase(it);
}

}  // namespace nvl::emu
