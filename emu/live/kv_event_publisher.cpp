#include "emu/live/kv_event_publisher.h"

#include <array>
#include <sstream>
#include <stdexcept>

#include <msgpack.hpp>

namespace nvl::emu::live {

namespace {

using Packer = msgpack::packer<std::stringstream>;

// The i-th token id standing in for a block's tokens: splitmix64 of its hash and i, in a 2^17 vocabulary.
std::uint32_t token_id(engine::BlockHash h, std::int64_t i) {
  std::uint64_t z = h + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::uint32_t>((z ^ (z >> 31)) & 0x1ffff);
}

const char* medium(engine::KvTier t) { return t == engine::KvTier::gpu ? "GPU" : "CPU"; }

}  // namespace

std::string encode_kv_event_batch(double ts, std::span<const engine::KvEvent> events, std::int32_t dp_rank,
                                  std::int64_t block_tokens) {
  // Runs of consecutive events of one kind and tier: one vLLM event each (a clear is one on its own).
  std::vector<std::span<const engine::KvEvent>> runs;
  for (std::size_t i = 0; i < events.size();) {
    std::size_t j = i + 1;
    while (j < events.size() && events[i].kind != engine::KvEvent::Kind::cleared && events[j].kind == events[i].kind &&
           events[j].tier == events[i].tier) {
      ++j;
    }
    runs.push_back(events.subspan(i, j - i));
    i = j;
  }
  std::stringstream out;
  Packer p(out);
  p.pack_array(3);
  p.pack(ts);
  p.pack_array(static_cast<std::uint32_t>(runs.size()));
  for (const auto run : runs) {
    if (run.front().kind == engine::KvEvent::Kind::cleared) {
      p.pack_array(1);
      p.pack("AllBlocksCleared");
      continue;
    }
    const bool stored = run.front().kind == engine::KvEvent::Kind::stored;
    p.pack_array(stored ? 8 : 3);
    p.pack(stored ? "BlockStored" : "BlockRemoved");
    p.pack_array(static_cast<std::uint32_t>(run.size()));
    for (const engine::KvEvent& e : run) p.pack(e.hash);
    if (stored) {
      p.pack_nil();  // parent_block_hash
      p.pack_array(static_cast<std::uint32_t>(run.size() * static_cast<std::size_t>(block_tokens)));
      for (const engine::KvEvent& e : run) {
        for (std::int64_t i = 0; i < block_tokens; ++i) p.pack(token_id(e.hash, i));
      }
      p.pack(block_tokens);
      p.pack_nil();  // lora_id
    }
    p.pack(medium(run.front().tier));
    if (stored) p.pack_nil();  // lora_name
  }
  p.pack(dp_rank);
  return out.str();
}

KvEventPublisher::KvEventPublisher(const std::string& address, int base_port, std::int32_t ranks,
                                   std::int64_t block_tokens)
    : block_tokens_(block_tokens) {
  for (std::int32_t r = 0; r < ranks; ++r) {
    zmq::socket_t& s = sockets_.emplace_back(context_, zmq::socket_type::pub);
    s.set(zmq::sockopt::linger, 0);
    const std::string endpoint =
        "tcp://" + address + ":" + (base_port == 0 ? std::string("*") : std::to_string(base_port + r));
    try {
      s.bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error("kv events: cannot listen on " + endpoint + " (DP rank " + std::to_string(r) +
                               "): " + e.what());
    }
    const std::string bound = s.get(zmq::sockopt::last_endpoint);
    ports_.push_back(static_cast<std::uint16_t>(std::stoi(bound.substr(bound.rfind(':') + 1))));
  }
  sequence_.assign(static_cast<std::size_t>(ranks), 0);
}

void KvEventPublisher::publish(std::int32_t rank, double ts, std::span<const engine::KvEvent> events) {
  const auto r = static_cast<std::size_t>(rank);
  const std::string payload = encode_kv_event_batch(ts, events, rank, block_tokens_);
  std::array<unsigned char, 8> seq{};
  for (int i = 0; i < 8; ++i) seq[static_cast<std::size_t>(7 - i)] = static_cast<unsigned char>(sequence_[r] >> (8 * i));
  ++sequence_[r];
  zmq::socket_t& s = sockets_[r];
  // PUB never blocks: with no subscriber, or one too slow, messages are dropped (as vLLM's are).
  s.send(zmq::buffer(std::string_view()), zmq::send_flags::sndmore);
  s.send(zmq::buffer(seq), zmq::send_flags::sndmore);
  s.send(zmq::buffer(payload), zmq::send_flags::none);
}

}  // namespace nvl::emu::live
