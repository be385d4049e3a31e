#pragma once
// Each DP rank's KV cache events over ZMQ PUB, as a vLLM worker started with --kv-events-config
// publishes them (vllm/distributed/kv_events.py), so that a router that routes by KV events (Dynamo's
// KV router, llm-d's scheduler, vLLM's production router) subscribes to the emulated ranks unchanged.
// Rank r publishes on tcp://ADDRESS:(base_port + r); each message is three frames: the topic (empty),
// an 8-byte big-endian sequence number (per rank, from 0), and a msgpack KVEventBatch
// [ts, [event, ...], data_parallel_rank] whose events are tagged arrays:
//   ["BlockStored", [hash, ...], parent_hash, [token_id, ...], block_size, lora_id, medium, lora_name]
//   ["BlockRemoved", [hash, ...], medium]
//   ["AllBlocksCleared"]                 (the rank's prefix cache was reset: POST /reset_prefix_cache)
// Hashes are the emulator's block hashes (prompt_estimate.h: a chain over the text's blocks); medium
// is "GPU" or "CPU" (the Grace tier); ts is emulated seconds. There is no tokenizer: token_ids are
// block_size ids drawn from the block's hash (equal blocks, equal ids), and parent_hash is nil (a run
// of blocks stored at once is one event). Used from one thread at a time (the runtime thread).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "engine/kv/kv_event.h"

namespace nvl::emu::live {

// One KVEventBatch in msgpack, the events in order (consecutive ones of one kind and tier together).
std::string encode_kv_event_batch(double ts, std::span<const engine::KvEvent> events, std::int32_t dp_rank,
                                  std::int64_t block_tokens);

class KvEventPublisher {
 public:
  // Binds one PUB socket per rank at address:(base_port + rank); base_port 0: any free ports. A port
  // that cannot be bound is a std::runtime_error naming it.
  KvEventPublisher(const std::string& address, int base_port, std::int32_t ranks, std::int64_t block_tokens);
  std::uint16_t port(std::int32_t rank) const { return ports_.at(static_cast<std::size_t>(rank)); }
  void publish(std::int32_t rank, double ts, std::span<const engine::KvEvent> events);

 private:
  zmq::context_t context_;
  std::vector<zmq::socket_t> sockets_;
  std::vector<std::uint16_t> ports_;
  std::vector<std::uint64_t> sequence_;
  std::int64_t block_tokens_;
};

}  // namespace nvl::emu::live
