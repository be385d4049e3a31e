#include "emu/live/pd_pairs.h"

namespace nvl::emu::live {

PdPairs::Met PdPairs::arrive(PdHalf h, PdHalf& other) {
  const Room room{h.target.prefill_instance, h.target.room};
  const auto it = waiting_.find(room);
  if (it == waiting_.end()) {
    waiting_room_[h.id] = room;
    waiting_.emplace(room, std::move(h));
    return Met::waiting;
  }
  if (it->second.target.prefill_half == h.target.prefill_half) return Met::duplicate;
  other = std::move(it->second);
  waiting_room_.erase(other.id);
  waiting_.erase(it);
  paired_[h.id] = other;
  paired_[other.id] = std::move(h);
  return Met::paired;
}

bool PdPairs::leave(engine::RequestId id) {
  const auto it = waiting_room_.find(id);
  if (it == waiting_room_.end()) return false;
  waiting_.erase(it->second);
  waiting_room_.erase(it);
  return true;
}

std::optional<PdHalf> PdPairs::partner(engine::RequestId id) const {
  const auto it = paired_.find(id);
  if (it == paired_.end()) return std::nullopt;
  return it->second;
}

void PdPairs::end(engine::RequestId id) {
  const auto it = paired_.find(id);
  if (it == paired_.end()) return;
  paired_.erase(it->second.id);
  paired_.erase(it);
}

std::int64_t PdPairs::waiting_prefills(std::int32_t instance) const {
  std::int64_t n = 0;
  for (const auto& [room, h] : waiting_) n += room.first == instance && h.target.prefill_half ? 1 : 0;
  return n;
}

}  // namespace nvl::emu::live
