#include "engine/system/load_reporter.h"

#include <stdexcept>

#include "engine/system/control_codec.h"
#include "engine/system/decode_instance_process.h"

namespace nvl::engine {

namespace {
bool same_load(const proto::LoadReport& a, const proto::LoadReport& b) {
  return a.running() == b.running() && a.waiting() == b.waiting() && a.tokens_in_flight() == b.tokens_in_flight() &&
         a.free_kv_blocks() == b.free_kv_blocks() && a.healthy() == b.healthy();
}
}  // namespace

LoadReporter::LoadReporter(rt::Runtime& rt, rt::Duration interval, ControlPlane& control, const PdDirectory& dir)
    : rt_(rt), interval_(interval), control_(control), dir_(dir) {
  if (interval_ <= rt::Duration()) throw std::invalid_argument("P/D system: the load report interval must be positive");
}

void LoadReporter::start() {
  last_.resize(dir_.ranks.size());
  armed_ = true;
  rt_.call_after(rt::Duration(), [this] { publish(); });
}

void LoadReporter::publish() {
  bool changed = false;
  for (std::int32_t r = 0; r < static_cast<std::int32_t>(dir_.ranks.size()); ++r) {
    proto::LoadReport report = to_report(r, dir_.decode_of(r).group().load(dir_.rank(r).local), rt_.now());
    std::optional<proto::LoadReport>& last = last_[static_cast<std::size_t>(r)];
    if (last && same_load(*last, report)) continue;
    changed = true;
    last = report;
    proto::ControlMessage m;
    *m.mutable_load() = std::move(report);
    control_.send(dir_.rank(r).address, dir_.router, std::move(m));
  }
  // Nothing changed: stop until a rank's next event re-arms it.
  armed_ = changed;
  if (armed_) rt_.call_after(interval_, [this] { publish(); });
}

void LoadReporter::arm() {
  if (armed_) return;
  armed_ = true;
  rt_.call_after(interval_, [this] { publish(); });
}

}  // namespace nvl::engine
