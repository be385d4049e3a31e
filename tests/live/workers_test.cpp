// serve --workers: every DP rank's own endpoint, as a vLLM worker's, for an external router. A request
// sent to a worker is served on its rank; each rank's KV events arrive over ZMQ as vLLM's msgpack
// KVEventBatch, decoded here with msgpack-c; a router that places a prompt on the rank whose published
// blocks match it longest finds its prefix cached there, and not on another rank.
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>
#include <msgpack.hpp>
#include <zmq.hpp>

#include "emu/live/prompt_estimate.h"
#include "tests/live/worker_test_helpers.h"

namespace nvl::live_test {
namespace workers_test {

using engine::BlockHash;

struct KvEventIn {
  std::string type;
  std::vector<BlockHash> hashes;
  std::string medium;
  std::int64_t block_size = 0;
  std::size_t token_ids = 0;
};

struct KvBatchIn {
  std::uint64_t seq = 0;
  double ts = 0;
  std::int64_t dp_rank = -1;
  std::vector<KvEventIn> events;
};

// A SUB socket on one rank's stream, decoding as a vLLM KV-event subscriber does.
class KvSubscriber {
 public:
  KvSubscriber(zmq::context_t& ctx, std::uint16_t port) : socket_(ctx, zmq::socket_type::sub) {
    socket_.set(zmq::sockopt::subscribe, "");
    socket_.set(zmq::sockopt::rcvtimeo, 100);
    socket_.connect("tcp://127.0.0.1:" + std::to_string(port));
  }
  // The next batch, or nothing within the timeout.
  std::optional<KvBatchIn> next() {
    std::vector<zmq::message_t> frames;
    for (;;) {
      zmq::message_t m;
      if (!socket_.recv(m)) return std::nullopt;
      const bool more = m.more();
      frames.push_back(std::move(m));
      if (!more) break;
    }
    EXPECT_EQ(frames.size(), 3u) << "topic, sequence, payload";
    EXPECT_EQ(frames[1].size(), 8u);
    KvBatchIn b;
    for (std::size_t i = 0; i < 8; ++i) b.seq = (b.seq << 8) | frames[1].data<unsigned char>()[i];
    const msgpack::object_handle h = msgpack::unpack(frames[2].data<char>(), frames[2].size());
    const msgpack::object_array batch = h.get().via.array;
    EXPECT_EQ(batch.size, 3u) << "[ts, events, data_parallel_rank]";
    b.ts = batch.ptr[0].as<double>();
    b.dp_rank = batch.ptr[2].as<std::int64_t>();
    for (const msgpack::object& o : batch.ptr[1].via.array) {
      const msgpack::object_array e = o.via.array;
      KvEventIn in;
      in.type = e.ptr[0].as<std::string>();
      if (in.type == "AllBlocksCleared") {
        EXPECT_EQ(e.size, 1u) << "a tag alone";
        b.events.push_back(std::move(in));
        continue;
      }
      in.hashes = e.ptr[1].as<std::vector<BlockHash>>();
      if (in.type == "BlockStored") {
        EXPECT_EQ(e.size, 8u) << "tag, hashes, parent, token ids, block size, lora id, medium, lora name";
        EXPECT_TRUE(e.ptr[2].is_nil());
        in.token_ids = e.ptr[3].via.array.size;
        in.block_size = e.ptr[4].as<std::int64_t>();
        in.medium = e.ptr[6].as<std::string>();
      } else {
        EXPECT_EQ(in.type, "BlockRemoved");
        in.medium = e.ptr[2].as<std::string>();
      }
      b.events.push_back(std::move(in));
    }
    return b;
  }

 private:
  zmq::socket_t socket_;
};

// A ZMQ subscriber misses what is published before its connection is up (the "slow joiner").
void let_subscribers_join() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

// Every GPU block a rank stored, from its stream, until `want` are all in (or 10 s).
std::set<BlockHash> stored_blocks(KvSubscriber& sub, std::int32_t rank, const std::vector<BlockHash>& want) {
  std::set<BlockHash> stored;
  std::uint64_t expected_seq = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const auto all_in = [&] {
    for (const BlockHash h : want) {
      if (!stored.contains(h)) return false;
    }
    return true;
  };
  while (!all_in() && std::chrono::steady_clock::now() < end) {
    const auto b = sub.next();
    if (!b) continue;
    EXPECT_EQ(b->seq, expected_seq++) << "no batch lost or reordered";
    EXPECT_EQ(b->dp_rank, rank);
    for (const KvEventIn& e : b->events) {
      if (e.type != "BlockStored" || e.medium != "GPU") continue;
      EXPECT_EQ(e.block_size, 64);
      EXPECT_EQ(e.token_ids, e.hashes.size() * 64u);
      stored.insert(e.hashes.begin(), e.hashes.end());
    }
  }
  return stored;
}

TEST(Workers, AWorkerServesOnItsRankAndPublishesTheBlocksItHolds) {
  auto server = start_server(worker_options());
  const std::string model = server->engine().model_name();
  zmq::context_t ctx;
  KvSubscriber rank3(ctx, server->kv_events_port(3));
  KvSubscriber rank0(ctx, server->kv_events_port(0));
  let_subscribers_join();
  const std::string prompt(6 * 64 * emu::live::kBytesPerToken + 40, 'p');  // six full blocks
  const auto r = post_json(server->worker_http_port(3), "/v1/completions",
                           {{"model", model}, {"prompt", prompt}, {"max_tokens", 4}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<BlockHash> blocks = emu::live::estimate_prompt(prompt, 64).block_hashes;
  ASSERT_EQ(blocks.size(), 6u);
  const std::set<BlockHash> stored = stored_blocks(rank3, 3, blocks);
  for (const BlockHash h : blocks) EXPECT_TRUE(stored.contains(h)) << "block " << h << " not published";
  EXPECT_FALSE(rank0.next().has_value()) << "rank 0 served nothing and stored nothing";
  // Served on rank 3: its own /metrics says so, and holds no other engine.
  const std::uint16_t own = server->worker_http_port(3);
  EXPECT_EQ(engine_figure(own, "vllm:request_success_total", 3, {{"finished_reason", "length"}}), 1);
  EXPECT_EQ(get(own, "/metrics").body.find("engine=\"0\""), std::string::npos);
  EXPECT_EQ(engine_figure(server->http_port(), "vllm:request_success_total", 0, {{"finished_reason", "length"}}), 0);
  EXPECT_EQ(get(own, "/health").status, 200);
  EXPECT_EQ(post_json(own, "/admin/fault", {{"kind", "gpu_lost"}, {"target", 1}}).status, 404) << "no admin on a worker";
}

TEST(Workers, ARouterReadingTheEventsFindsThePrefixWhereTheyPutIt) {
  auto server = start_server(worker_options());
  const std::string model = server->engine().model_name();
  const std::int32_t ranks = server->engine().ranks();
  zmq::context_t ctx;
  std::vector<std::unique_ptr<KvSubscriber>> subs;
  for (std::int32_t r = 0; r < ranks; ++r) subs.push_back(std::make_unique<KvSubscriber>(ctx, server->kv_events_port(r)));
  let_subscribers_join();
  const std::string prefix(8 * 64 * emu::live::kBytesPerToken, 's');  // eight blocks of shared system prompt
  ASSERT_EQ(post_json(server->worker_http_port(5), "/v1/completions",
                      {{"model", model}, {"prompt", prefix + " first question"}, {"max_tokens", 2}})
                .status,
            200);
  // The router's index: what each rank published.
  const std::vector<BlockHash> shared = emu::live::estimate_prompt(prefix, 64).block_hashes;
  std::vector<std::set<BlockHash>> index(static_cast<std::size_t>(ranks));
  index[5] = stored_blocks(*subs[5], 5, shared);
  for (std::int32_t r = 0; r < ranks; ++r) {
    if (r == 5) continue;
    while (const auto b = subs[static_cast<std::size_t>(r)]->next()) {
      for (const KvEventIn& e : b->events) index[static_cast<std::size_t>(r)].insert(e.hashes.begin(), e.hashes.end());
    }
  }
  // Route the next prompt to the rank whose published blocks match its leading blocks longest.
  const std::string next = prefix + " second question";
  const std::vector<BlockHash> wanted = emu::live::estimate_prompt(next, 64).block_hashes;
  std::int32_t best = -1;
  std::size_t best_len = 0;
  for (std::int32_t r = 0; r < ranks; ++r) {
    std::size_t n = 0;
    while (n < wanted.size() && index[static_cast<std::size_t>(r)].contains(wanted[n])) ++n;
    if (n > best_len) best = r, best_len = n;
  }
  ASSERT_EQ(best, 5);
  ASSERT_EQ(best_len, 8u);
  const auto hits = [&](std::int32_t r) {
    return engine_figure(server->worker_http_port(r), "vllm:prefix_cache_hits_total", r);
  };
  const double before = hits(5);
  ASSERT_EQ(post_json(server->worker_http_port(best), "/v1/completions",
                      {{"model", model}, {"prompt", next}, {"max_tokens", 2}})
                .status,
            200);
  // The eight shared blocks were found cached: 8 x 64 tokens.
  EXPECT_EQ(hits(5) - before, 8 * 64);
  // The same prompt on a rank that never saw the prefix: nothing cached there.
  ASSERT_EQ(post_json(server->worker_http_port(2), "/v1/completions",
                      {{"model", model}, {"prompt", prefix + " third question"}, {"max_tokens", 2}})
                .status,
            200);
  EXPECT_EQ(hits(2), 0);
}

TEST(Workers, AResetPrefixCacheClearsTheRankAndSaysSoInOneEvent) {
  auto server = start_server(worker_options());
  const std::string model = server->engine().model_name();
  zmq::context_t ctx;
  KvSubscriber rank4(ctx, server->kv_events_port(4));
  let_subscribers_join();
  const std::string prompt(6 * 64 * emu::live::kBytesPerToken + 40, 'r');  // six full blocks
  const std::uint16_t own = server->worker_http_port(4);
  const auto ask = [&] {
    ASSERT_EQ(post_json(own, "/v1/completions", {{"model", model}, {"prompt", prompt}, {"max_tokens", 2}}).status, 200);
  };
  const auto hits = [&] { return engine_figure(own, "vllm:prefix_cache_hits_total", 4); };
  // A reset is refused while a request holds blocks (as vLLM's is), and an answer can arrive before its
  // request has let go of them: each reset waits for the rank to hold none.
  const auto settled = [&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (engine_figure(own, "vllm:kv_cache_usage_perc", 4) > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  ask();
  const std::vector<BlockHash> blocks = emu::live::estimate_prompt(prompt, 64).block_hashes;
  ASSERT_EQ(stored_blocks(rank4, 4, blocks).size(), blocks.size());
  settled();
  ASSERT_EQ(post_json(own, "/reset_prefix_cache", nlohmann::json::object()).status, 200);
  // One AllBlocksCleared, not a BlockRemoved per block.
  std::vector<std::string> seen;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen.empty() && std::chrono::steady_clock::now() < end) {
    if (const auto b = rank4.next()) {
      for (const KvEventIn& e : b->events) seen.push_back(e.type);
    }
  }
  EXPECT_EQ(seen, std::vector<std::string>{"AllBlocksCleared"});
  // The same prompt again finds nothing cached (it would have found its six blocks, 384 tokens, without
  // the reset: the third asking shows it).
  const double before = hits();
  ask();
  EXPECT_EQ(hits() - before, 0);
  ask();
  EXPECT_EQ(hits() - before, 6 * 64);
  // The main port resets every rank, this one among them.
  settled();
  ASSERT_EQ(post_json(server->http_port(), "/reset_prefix_cache", nlohmann::json::object()).status, 200);
  ask();
  EXPECT_EQ(hits() - before, 6 * 64);
}

TEST(Workers, ALostGpuTakesItsWorkerOutOfService) {
  // A long answer in flight on every worker: the lost GPU's fails, the others go on. (Declared before
  // the server, which outlives them otherwise: its shutdown ends the others.)
  std::mutex mu;
  std::map<std::int32_t, std::string> failures;
  auto server = start_server(worker_options());
  for (std::int32_t r = 0; r < server->engine().ranks(); ++r) {
    const auto a = server->engine().submit_text("talk on " + std::to_string(r), 100000,
                                                [&, r](const emu::live::StreamUpdate& u) {
                                                  if (!u.finished) return;
                                                  std::lock_guard<std::mutex> lock(mu);
                                                  failures[r] = u.failure.empty() ? "finished" : u.failure;
                                                },
                                                r);
    ASSERT_EQ(a.refusal, emu::live::Refusal::none) << a.detail;
  }
  ASSERT_EQ(post_json(server->http_port(), "/admin/fault", {{"kind", "gpu_lost"}, {"target", 2}}).status, 200);
  std::vector<std::int32_t> down;
  for (int attempt = 0; attempt < 100 && down.empty(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (std::int32_t r = 0; r < server->engine().ranks(); ++r) {
      if (get(server->worker_http_port(r), "/health").status == 503) down.push_back(r);
    }
  }
  ASSERT_EQ(down.size(), 1u) << "one GPU, one DP rank";
  const std::uint16_t port = server->worker_http_port(down[0]);
  const auto refused = post_json(port, "/v1/completions",
                                 {{"model", server->engine().model_name()}, {"prompt", "hello"}, {"max_tokens", 2}});
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(engine_figure(port, "nvl72emu:engine_healthy", down[0]), 0);
  EXPECT_EQ(get(server->http_port(), "/health").status, 200) << "the other ranks still serve";
  for (int attempt = 0; attempt < 100; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!failures.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::map<std::int32_t, std::string> ended;
  {
    std::lock_guard<std::mutex> lock(mu);
    ended = failures;
  }
  ASSERT_EQ(ended.size(), 1u) << "only the lost rank's request ended";
  EXPECT_EQ(ended.begin()->first, down[0]);
  EXPECT_NE(ended.begin()->second.find("DP rank " + std::to_string(down[0]) + " failed"), std::string::npos)
      << ended.begin()->second;
  server->stop();
}

TEST(Workers, ATakenWorkerPortIsNamed) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor taken(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const int port = taken.local_endpoint().port();
  const auto expect_refused = [port](int emu::live::LiveServerOptions::*field, const char* what) {
    emu::live::LiveServerOptions opts = worker_options();
    opts.*field = port;
    try {
      start_server(opts);
      ADD_FAILURE() << "started with DP rank 0's " << what << " taken";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
    }
  };
  expect_refused(&emu::live::LiveServerOptions::worker_http_port, "HTTP port");
  expect_refused(&emu::live::LiveServerOptions::kv_events_port, "KV event port");
}

}  // namespace workers_test
}  // namespace nvl::live_test
