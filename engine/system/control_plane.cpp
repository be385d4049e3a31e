#include "engine/system/control_plane.h"

#include <memory>
#include <stdexcept>

namespace nvl::engine {

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
  network_->listen(at, [this, at](hal::Address, std::string payload) {
    proto::ControlBatch batch;
    if (!batch.ParseFromString(payload)) {
      rt_.record("control", "malformed_batch", {{"host", at.host}, {"port", at.port}}, rt::Severity::error);
      return;
    }
    for (const proto::ControlMessage& m : batch.messages()) deliver(at, m);
  });
}

void ControlPlane::deliver(hal::Address to, const proto::ControlMessage& msg) {
  const auto it = handlers_.find(to);
  if (it == handlers_.end()) {
    on_lost_(msg, "no endpoint on host " + std::to_string(to.host) + " port " + std::to_string(to.port));
    return;
  }
  it->second(msg);
}

void ControlPlane::send(hal::Address from, hal::Address to, proto::ControlMessage msg) {
  ++messages_;
  if (network_ == nullptr) {
    deliver(to, msg);
    return;
  }
  proto::ControlBatch& batch = outbox_[{from, to}];
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
  auto outbox = std::move(outbox_);
  outbox_.clear();
  for (auto& [link, batch] : outbox) {
    ++batches_;
    std::string payload = batch.SerializeAsString();
    auto sent = std::make_shared<proto::ControlBatch>(std::move(batch));
    network_->send(link.first, link.second, std::move(payload), [this, sent](const hal::HalError* error) {
      if (error == nullptr) return;
      for (const proto::ControlMessage& m : sent->messages()) on_lost_(m, error->what());
    });
  }
}

}  // namespace nvl::engine
