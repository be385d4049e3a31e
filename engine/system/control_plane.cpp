#include "engine/system/control_plane.h"

#include <algorithm>
#include <stdexcept>

namespace nvl::engine {

class ControlPlane::BatchMessage final : public hal::Message {
 public:
  std::size_t wire_bytes() const override { return batch.ByteSizeLong(); }
  std::string bytes() const override { return batch.SerializeAsString(); }

  proto::ControlBatch batch;
};

namespace {
// KV events of one rank, kind and tier queued back to back travel as one message (as SGLang and
// Dynamo batch them): appends `msg`'s hashes to `last` when it can.
bool merge_kv_events(proto::ControlMessage& last, const proto::ControlMessage& msg) {
  if (!last.has_kv_event() || !msg.has_kv_event()) return false;
  proto::KvEventMsg& a = *last.mutable_kv_event();
  const proto::KvEventMsg& b = msg.kv_event();
  if (a.kind() != b.kind() || a.tier() != b.tier() || a.rank() != b.rank()) return false;
  a.mutable_hashes()->MergeFrom(b.hashes());
  return true;
}
}  // namespace

ControlPlane::ControlPlane(rt::Runtime& rt, hal::Network* network, LostHandler on_lost)
    : rt_(rt), network_(network), on_lost_(std::move(on_lost)) {}

ControlPlane::~ControlPlane() {
  if (network_ == nullptr) return;
  for (const auto& [at, handler] : handlers_) network_->unlisten(at);
}

void ControlPlane::listen(hal::Address at, Handler handler) {
  if (!handlers_.emplace(at, std::move(handler)).second) {
    throw std::logic_error("control plane: two endpoints on host " + std::to_string(at.host) + " port " +
                           std::to_string(at.port));
  }
  if (network_ == nullptr) return;
  network_->listen(at, [this, at](hal::Address, const hal::Message& message) { receive(at, message); });
}

void ControlPlane::receive(hal::Address at, const hal::Message& message) {
  // A batch of this process's: read where it lies (its sender reuses it only after the next flush).
  if (const auto* local = dynamic_cast<const BatchMessage*>(&message)) {
    for (const proto::ControlMessage& m : local->batch.messages()) deliver(at, m);
    return;
  }
  // A nested receive (not expected: delivery always comes from the loop) parses into a batch of its own.
  proto::ControlBatch nested;
  proto::ControlBatch& batch = receiving_ ? nested : incoming_;
  struct Receiving {
    bool& flag;
    bool was;
    ~Receiving() { flag = was; }
  } receiving{receiving_, receiving_};
  receiving_ = true;
  if (!batch.ParseFromString(message.bytes())) {
    rt_.record("control", "malformed_batch", {{"host", at.host}, {"port", at.port}}, rt::Severity::error);
    return;
  }
  for (const proto::ControlMessage& m : batch.messages()) deliver(at, m);
}

void ControlPlane::deliver(hal::Address to, const proto::ControlMessage& msg) {
  const auto it = handlers_.find(to);
  if (it == handlers_.end()) {
    on_lost_(msg, "no endpoint on host " + std::to_string(to.host) + " port " + std::to_string(to.port));
    return;
  }
  it->second(msg);
}

std::uint32_t ControlPlane::take_batch() {
  if (free_batches_.empty()) {
    batch_pool_.push_back(std::make_shared<BatchMessage>());
    return static_cast<std::uint32_t>(batch_pool_.size() - 1);
  }
  const std::uint32_t b = free_batches_.back();
  free_batches_.pop_back();
  std::shared_ptr<BatchMessage>& slot = batch_pool_[b];
  if (slot.use_count() > 1) {
    slot = std::make_shared<BatchMessage>();  // still held where it went: not cleared under its reader
  } else {
    slot->batch.Clear();
  }
  return b;
}

void ControlPlane::send(hal::Address from, hal::Address to, proto::ControlMessage msg) {
  ++messages_;
  if (network_ == nullptr) {
    deliver(to, msg);
    return;
  }
  // A turn has a few dozen links at most; the one just used is the likeliest.
  auto link = std::find_if(outbox_.rbegin(), outbox_.rend(), [&](const Link& l) { return l.from == from && l.to == to; });
  if (link == outbox_.rend()) {
    outbox_.push_back(Link{from, to, take_batch()});
    link = outbox_.rbegin();
  }
  proto::ControlBatch& batch = batch_pool_[link->batch]->batch;
  const int n = batch.messages_size();
  if (n > 0 && merge_kv_events(*batch.mutable_messages(n - 1), msg)) return;
  *batch.add_messages() = std::move(msg);
  if (!flush_armed_) {
    flush_armed_ = true;
    rt_.call_after(rt::Duration(), [this] { flush(); });
  }
}

void ControlPlane::flush() {
  flush_armed_ = false;
  // Batches delivered before this turn: their receivers are done with them.
  free_batches_.insert(free_batches_.end(), retired_batches_.begin(), retired_batches_.end());
  retired_batches_.clear();
  std::vector<Link> outbox;
  outbox.swap(outbox_);
  // Links in (from, to) order: the order the network sees them in does not depend on who spoke first.
  std::sort(outbox.begin(), outbox.end(),
            [](const Link& a, const Link& b) { return a.from != b.from ? a.from < b.from : a.to < b.to; });
  for (const Link& link : outbox) {
    ++batches_;
    const std::uint32_t b = link.batch;
    network_->send(link.from, link.to, batch_pool_[b], [this, b](const hal::HalError* error) { sent(b, error); });
  }
  // The emptied vector keeps its capacity for the next turn.
  outbox.clear();
  if (outbox_.empty()) outbox_.swap(outbox);
}

void ControlPlane::sent(std::uint32_t b, const hal::HalError* error) {
  if (error != nullptr) {
    for (const proto::ControlMessage& m : batch_pool_[b]->batch.messages()) on_lost_(m, error->what());
  }
  retired_batches_.push_back(b);
}

}  // namespace nvl::engine
