#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"
#include "fabric/collective_plan.h"
#include "fabric/fabric_collectives.h"
#include "fabric/probe.h"
#include "fabric/profile_loader.h"

using namespace nvl;

namespace collectives_test {

std::vector<hal::DeviceId> ranks(int n, int first = 0) {
  std::vector<hal::DeviceId> m;
  for (int i = 0; i < n; ++i) m.push_back(first + i);
  return m;
}

// Member `rank`'s part of a call, shared as a graph hands it to its group (a new object each time).
hal::SharedCollectiveOp part(const std::vector<hal::CollectiveOp>& ops, int rank) {
  return std::make_shared<const hal::CollectiveOp>(ops[static_cast<std::size_t>(rank)]);
}

std::vector<hal::CollectiveOp> same_op(int n, hal::CollectiveKind kind, std::uint64_t bytes) {
  hal::CollectiveOp op;
  op.kind = kind;
  op.name = "op";
  op.bytes = bytes;
  return std::vector<hal::CollectiveOp>(static_cast<std::size_t>(n), op);
}

// Fast and exact paths agree within this share on healthy, symmetric cases (they differ only by the
// nanosecond rounding of each rate phase).
constexpr double kPathTolerance = 1e-3;

void expect_paths_agree(const fabric::ClusterSpec& spec, const std::vector<hal::DeviceId>& m,
                        const std::vector<hal::CollectiveOp>& ops) {
  const auto fast = fabric::time_collective(spec, m, ops, true);
  const auto exact = fabric::time_collective(spec, m, ops, false);
  EXPECT_GT(fast.ns(), 0);
  EXPECT_NEAR(static_cast<double>(fast.ns()), static_cast<double>(exact.ns()), kPathTolerance * static_cast<double>(exact.ns()));
}

// An EP64 dispatch sending bytes(i, j) from rank i to rank j: fast and exact within 1%.
template <typename Bytes>
void expect_unequal_ep64_agrees(Bytes bytes) {
  auto ops = fabric::uniform_all_to_all(64, 1, hal::AllToAllRole::moe_dispatch);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (std::size_t j = 0; j < ops[i].send_bytes.size(); ++j) ops[i].send_bytes[j] = i == j ? 0 : bytes(i, j);
  }
  const auto spec = fabric::make_cluster("gb300-nvl72", 1);
  const auto fast = fabric::time_collective(spec, ranks(64), ops, true);
  const auto exact = fabric::time_collective(spec, ranks(64), ops, false);
  EXPECT_NEAR(static_cast<double>(fast.ns()), static_cast<double>(exact.ns()), 0.01 * static_cast<double>(exact.ns()));
}

struct Rig {
  rt::VirtualRuntime rt;
  fabric::Fabric fab;
  fabric::FabricCollectives coll;
  explicit Rig(const std::string& profile = "gb300-nvl72", int units = 1, bool fast = true)
      : fab(rt, fabric::make_cluster(profile, units)), coll(fab, fabric::CollectivesOptions{fast}) {}
};

TEST(Collectives, FastAndExactAgreeOnEp64Dispatch) {
  const auto spec = fabric::make_cluster("gb300-nvl72", 1);
  expect_paths_agree(spec, ranks(64), fabric::uniform_all_to_all(64, 128 * 8 * 14336 / 64, hal::AllToAllRole::moe_dispatch));
}

TEST(Collectives, FastAndExactAgreeOnAnEp64AllToAllOfUnequalSizes) {
  // Sampled expert routing gives every pair its own size: thousands of distinct completions, which the
  // fast path takes in batches of those ending within 0.5% of each other; the exact mode one by one.
  expect_unequal_ep64_agrees([](std::size_t i, std::size_t j) { return ((i * 7 + j * 13) % 17 + 1) * 32'768; });
}

TEST(Collectives, FastAndExactAgreeOnALatencyBoundEp64AllToAllOfUnequalSizes) {
  // A decode step's dispatch: one to eight tokens' 7,168 fp8 bytes per pair, ~10 us of fixed cost
  // beside well under 0.1 us on the busiest link: priced without solving, within 1% of the flows.
  expect_unequal_ep64_agrees([](std::size_t i, std::size_t j) { return ((i * 5 + j * 3) % 8 + 1) * 7'168; });
}

TEST(Collectives, FastAndExactAgreeOnMixedNvlinkAndRdmaAllToAll) {
  // 16 ranks over two HGX nodes: 7 peers over NVLink, 8 over the NICs, finishing at different times.
  const auto spec = fabric::make_cluster("hgx-h800", 2);
  expect_paths_agree(spec, ranks(16), fabric::uniform_all_to_all(16, 1 << 20, hal::AllToAllRole::plain));
}

TEST(Collectives, FastAndExactAgreeOnRingNvlsTreeAndBroadcast) {
  const auto rack = fabric::make_cluster("gb300-nvl72", 1);
  expect_paths_agree(rack, ranks(8), same_op(8, hal::CollectiveKind::all_reduce, 256 << 20));  // NVLS
  expect_paths_agree(rack, ranks(8), same_op(8, hal::CollectiveKind::all_reduce, 4096));       // tree
  expect_paths_agree(rack, ranks(8), same_op(8, hal::CollectiveKind::all_gather, 64 << 20));
  expect_paths_agree(rack, ranks(8), same_op(8, hal::CollectiveKind::broadcast, 64 << 20));
  const auto two = fabric::make_cluster("hgx-h100", 2);
  expect_paths_agree(two, ranks(16), same_op(16, hal::CollectiveKind::all_reduce, 64 << 20));  // ring across nodes
}

TEST(Collectives, IdenticalCallsArePricedOnce) {
  // With the very same op objects every call (a graph replayed) and with equal ones made anew.
  for (const bool same_objects : {true, false}) {
    Rig r;
    auto g = r.coll.create_group("ep64", ranks(64));
    const auto ops = fabric::uniform_all_to_all(64, 14336, hal::AllToAllRole::moe_dispatch);
    std::vector<hal::SharedCollectiveOp> kept;
    for (int rank = 0; rank < 64; ++rank) kept.push_back(part(ops, rank));
    // As in a decode graph: each rank arrives at the next call when its previous one is done.
    int done = 0;
    std::vector<int> calls(64, 0);
    std::function<void(int)> next = [&](int rank) {
      if (calls[static_cast<std::size_t>(rank)]++ == 150) return;
      g->arrive(rank, same_objects ? kept[static_cast<std::size_t>(rank)] : part(ops, rank),
                [&, rank](const hal::HalError* e) {
                  EXPECT_EQ(e, nullptr);
                  ++done;
                  next(rank);
                });
    };
    for (int rank = 0; rank < 64; ++rank) next(rank);
    r.rt.run();
    EXPECT_EQ(done, 150 * 64) << same_objects;
    const auto& s = static_cast<fabric::FabricCommGroup&>(*g).stats();
    EXPECT_EQ(s.priced, 1u) << same_objects;
    EXPECT_EQ(s.fast, 150u) << same_objects;
  }
}

TEST(Collectives, KeptOpObjectsOfTwoSignaturesAreNotConfused) {
  // Two calls replayed in turn with the same objects each time, as a layer body's dispatch and combine:
  // each is priced once, and each replay takes its own signature's time.
  Rig r;
  auto g = r.coll.create_group("ep64", ranks(64));
  const auto small = fabric::uniform_all_to_all(64, 1 << 20, hal::AllToAllRole::moe_dispatch);
  const auto large = fabric::uniform_all_to_all(64, 8 << 20, hal::AllToAllRole::moe_dispatch);
  std::vector<hal::SharedCollectiveOp> a, b;
  for (int rank = 0; rank < 64; ++rank) {
    a.push_back(part(small, rank));
    b.push_back(part(large, rank));
  }
  std::vector<rt::Duration> took;
  for (int i = 0; i < 6; ++i) {
    const auto& ops = i % 2 == 0 ? a : b;
    const rt::Time start = r.rt.now();
    rt::Time last = start;
    for (int rank = 0; rank < 64; ++rank) {
      g->arrive(rank, ops[static_cast<std::size_t>(rank)], [&](const hal::HalError* e) {
        EXPECT_EQ(e, nullptr);
        last = std::max(last, r.rt.now());
      });
    }
    r.rt.run();
    took.push_back(last - start);
  }
  const auto& s = static_cast<fabric::FabricCommGroup&>(*g).stats();
  EXPECT_EQ(s.priced, 2u);
  EXPECT_LT(took[0] * 4, took[1]);  // eight times the bytes, bandwidth-bound
  for (int i = 2; i < 6; ++i) EXPECT_EQ(took[static_cast<std::size_t>(i)], took[static_cast<std::size_t>(i % 2)]) << i;
}

TEST(Collectives, ArrivingWithoutAnOpIsAnError) {
  Rig r;
  auto g = r.coll.create_group("tp2", ranks(2));
  EXPECT_THROW(g->arrive(0, nullptr, [](const hal::HalError*) {}), std::invalid_argument);
}

TEST(Collectives, AllToAllsDifferingInOneSendSizeArePricedApart) {
  Rig r;
  auto g = r.coll.create_group("ep64", ranks(64));
  const auto a = fabric::uniform_all_to_all(64, 14336, hal::AllToAllRole::moe_dispatch);
  auto b = a;
  b.back().send_bytes.back() += 4096;  // the last word of the signature: one token more to one peer
  const auto call = [&](const std::vector<hal::CollectiveOp>& ops) {
    for (int rank = 0; rank < 64; ++rank) {
      g->arrive(rank, part(ops, rank), [](const hal::HalError* e) { EXPECT_EQ(e, nullptr); });
    }
    r.rt.run();
  };
  call(a);
  call(b);
  call(a);
  call(b);
  const auto& s = static_cast<fabric::FabricCommGroup&>(*g).stats();
  EXPECT_EQ(s.priced, 2u);
  EXPECT_EQ(s.fast, 4u);
}

TEST(Collectives, FastPathCountsTheWireBytesOnEveryLink) {
  Rig r;
  auto g = r.coll.create_group("ep8", ranks(8));
  const std::uint64_t pair_bytes = 3 << 20;
  const auto ops = fabric::uniform_all_to_all(8, pair_bytes, hal::AllToAllRole::moe_dispatch);
  for (int call = 0; call < 2; ++call) {
    for (int rank = 0; rank < 8; ++rank) {
      g->arrive(rank, part(ops, rank), [](const hal::HalError* e) { EXPECT_EQ(e, nullptr); });
    }
    r.rt.run();
  }
  ASSERT_EQ(static_cast<fabric::FabricCommGroup&>(*g).stats().fast, 2u);
  // Each call sends 7 pairs' bytes out of and into every member, at the dispatch kernel's efficiency.
  const double per_call = 7.0 * static_cast<double>(pair_bytes) / r.fab.profile().collectives.a2a_dispatch.efficiency;
  for (hal::DeviceId gpu = 0; gpu < 8; ++gpu) {
    const auto& ports = r.fab.topology().gpu(gpu);
    EXPECT_DOUBLE_EQ(r.fab.carried_bytes(ports.nvl_up), 2 * per_call) << gpu;
    EXPECT_DOUBLE_EQ(r.fab.carried_bytes(ports.nvl_down), 2 * per_call) << gpu;
  }
  EXPECT_EQ(r.fab.carried_bytes(r.fab.topology().gpu(8).nvl_up), 0.0);
}

TEST(Collectives, ManySignaturesKeepTheirAnswers) {
  // More signatures than the group keeps: the ones dropped are priced again, to the same times.
  Rig r;
  auto g = r.coll.create_group("ep8", ranks(8));
  const auto time_call = [&](int k) {
    const std::uint64_t pair_bytes = static_cast<std::uint64_t>(k + 1) << 20;
    const auto ops = fabric::uniform_all_to_all(8, pair_bytes, hal::AllToAllRole::moe_combine);
    const rt::Time start = r.rt.now();
    rt::Time last = start;
    for (int rank = 0; rank < 8; ++rank) {
      g->arrive(rank, part(ops, rank), [&](const hal::HalError* e) {
        EXPECT_EQ(e, nullptr);
        last = std::max(last, r.rt.now());
      });
    }
    r.rt.run();
    return last - start;
  };
  std::vector<rt::Duration> first;
  for (int k = 0; k < 600; ++k) first.push_back(time_call(k));
  for (std::size_t k = 1; k < first.size(); ++k) EXPECT_GT(first[k], first[k - 1]) << k;
  for (int k : {599, 598, 599, 0, 1, 0, 300}) EXPECT_EQ(time_call(k), first[static_cast<std::size_t>(k)]) << k;
  const auto& s = static_cast<fabric::FabricCommGroup&>(*g).stats();
  EXPECT_EQ(s.fast, 607u);
  EXPECT_GE(s.priced, 600u);
  EXPECT_EQ(s.failed, 0u);
}

// Two VirtualRuntimes alive at once on one thread hang the loop (see the report), so reference times
// are measured before the test's own runtime exists.
TEST(Collectives, SlowMemberDelaysEveryone) {
  const auto ops = fabric::uniform_all_to_all(8, 1 << 20, hal::AllToAllRole::moe_dispatch);
  const auto alone = fabric::time_collective(fabric::make_cluster("gb300-nvl72", 1), ranks(8), ops);
  Rig r;
  auto g = r.coll.create_group("ep8", ranks(8));
  std::vector<rt::Time> done(8);
  for (int rank = 0; rank < 8; ++rank) {
    const rt::Time at = rt::Time::zero() + (rank == 3 ? rt::us(500) : rt::Duration());
    r.rt.call_at(at, [&, rank] {
      g->arrive(rank, part(ops, rank), [&, rank](const hal::HalError*) { done[static_cast<std::size_t>(rank)] = r.rt.now(); });
    });
  }
  r.rt.run();
  for (const auto& t : done) EXPECT_EQ(t, rt::Time::zero() + rt::us(500) + alone);
}

TEST(Collectives, CompetingTrafficTakesTheExactPathAndSlowsTheCollective) {
  const auto ops = fabric::uniform_all_to_all(8, 64 << 20, hal::AllToAllRole::plain);
  const auto alone = fabric::time_collective(fabric::make_cluster("gb300-nvl72", 1), ranks(8), ops);
  Rig r;
  auto g = r.coll.create_group("ep8", ranks(8));
  // A long KV copy from GPU 0 to GPU 1 over NVLink occupies GPU 0's uplink.
  r.fab.transfer(fabric::Endpoint::gpu(0), fabric::Endpoint::gpu(1), 10'000'000'000ULL, hal::RdmaPath::nvlink, 1.0,
                 rt::Duration(), "kv", [](const hal::HalError*) {});
  rt::Time last;
  r.rt.call_at(rt::Time::from_ns(1000), [&] {
    for (int rank = 0; rank < 8; ++rank) {
      g->arrive(rank, part(ops, rank), [&](const hal::HalError*) { last = std::max(last, r.rt.now()); });
    }
  });
  r.rt.run();
  const auto& s = static_cast<fabric::FabricCommGroup&>(*g).stats();
  EXPECT_EQ(s.exact, 1u);
  EXPECT_GT(last - rt::Time::from_ns(1000), alone + alone / 20);
}

// A KV copy GPU 0 -> GPU 1 starting halfway through a bandwidth-bound EP8 all-to-all, on a rig of each
// fabric mode: when the collective's last member is done and when the copy is.
struct SharedRun {
  rt::Duration collective;
  rt::Duration copy;
  fabric::CommGroupStats stats;
};
SharedRun all_to_all_beside_a_copy(bool fast, rt::Duration copy_at, int calls) {
  const auto ops = fabric::uniform_all_to_all(8, 256 << 20, hal::AllToAllRole::plain);
  Rig r("gb300-nvl72", 1, fast);
  auto g = r.coll.create_group("ep8", ranks(8));
  rt::Time last, copied;
  r.rt.call_at(rt::Time::zero() + copy_at, [&] {
    r.fab.transfer(fabric::Endpoint::gpu(0), fabric::Endpoint::gpu(1), 4'000'000'000ULL, hal::RdmaPath::nvlink, 1.0,
                   rt::Duration(), "kv", [&](const hal::HalError* e) {
                     EXPECT_EQ(e, nullptr);
                     copied = r.rt.now();
                   });
  });
  // `calls` calls back to back: each member arrives for the next as soon as it is done.
  std::function<void(int, int)> member = [&](int rank, int left) {
    g->arrive(rank, part(ops, rank), [&, rank, left](const hal::HalError* e) {
      EXPECT_EQ(e, nullptr);
      last = std::max(last, r.rt.now());
      if (left > 1) member(rank, left - 1);
    });
  };
  for (int rank = 0; rank < 8; ++rank) member(rank, calls);
  r.rt.run();
  return {last - rt::Time::zero(), copied - rt::Time::zero() - copy_at,
          static_cast<fabric::FabricCommGroup&>(*g).stats()};
}

TEST(Collectives, AFlowMeetingAFastPathCollectiveSlowsBothAsTheExactModeDoes) {
  const auto ops = fabric::uniform_all_to_all(8, 256 << 20, hal::AllToAllRole::plain);
  const auto alone = fabric::time_collective(fabric::make_cluster("gb300-nvl72", 1), ranks(8), ops);
  const SharedRun fast = all_to_all_beside_a_copy(true, alone / 2, 1);
  const SharedRun exact = all_to_all_beside_a_copy(false, alone / 2, 1);
  EXPECT_EQ(fast.stats.fast, 1u);
  EXPECT_EQ(fast.stats.slowed, 1u);
  EXPECT_EQ(exact.stats.exact, 1u);
  // Hand estimate: GPU 0's uplink and GPU 1's downlink each carry 7 of the collective's flows; the copy
  // makes 8, so the half still to send there moves at 7/8 of the rate: 1/2 + 1/2 * 8/7 = 1.071 x alone.
  const double a = static_cast<double>(alone.ns());
  EXPECT_NEAR(static_cast<double>(exact.collective.ns()), 1.071 * a, 0.01 * a);
  EXPECT_NEAR(static_cast<double>(fast.collective.ns()), static_cast<double>(exact.collective.ns()),
              0.03 * static_cast<double>(exact.collective.ns()));
  EXPECT_NEAR(static_cast<double>(fast.copy.ns()), static_cast<double>(exact.copy.ns()),
              0.03 * static_cast<double>(exact.copy.ns()));
}

TEST(Collectives, RepeatedCallsHoldTheirLinksForTheirSpanAndCountTheirBytes) {
  const auto ops = fabric::uniform_all_to_all(8, 1 << 20, hal::AllToAllRole::moe_dispatch);
  const auto alone = fabric::time_collective(fabric::make_cluster("gb300-nvl72", 1), ranks(8), ops);
  Rig r;
  auto g = r.coll.create_group("ep8", ranks(8));
  std::vector<hal::SharedCollectiveOp> parts;
  for (int rank = 0; rank < 8; ++rank) parts.push_back(part(ops, rank));
  std::vector<rt::Time> done(8);
  for (int rank = 0; rank < 8; ++rank) {
    g->arrive(rank, parts[static_cast<std::size_t>(rank)], [&, rank](const hal::HalError* e) {
      EXPECT_EQ(e, nullptr);
      // As a device fast-forwarding 9 more layers of this call, 9 periods of `alone` each.
      g->repeat(rank, parts[static_cast<std::size_t>(rank)], 9, rt::Duration(), alone * 9, [&, rank](const hal::HalError* e2) {
        EXPECT_EQ(e2, nullptr);
        done[static_cast<std::size_t>(rank)] = r.rt.now();
      });
    });
  }
  r.rt.run();
  for (const auto& t : done) EXPECT_EQ(t, rt::Time::zero() + alone * 10);
  const double per_call = 7.0 * (1 << 20) / r.fab.profile().collectives.a2a_dispatch.efficiency;
  EXPECT_DOUBLE_EQ(r.fab.carried_bytes(r.fab.topology().gpu(0).nvl_up), 10 * per_call);
  EXPECT_EQ(static_cast<fabric::FabricCommGroup&>(*g).stats().repeats, 1u);
}

TEST(Collectives, RepeatedCallsBesideAFlowAreSlowedAsTheExactModeSlowsTheCalls) {
  // Ten bandwidth-bound calls back to back; the fast mode prices the first and holds nine as repeated.
  const auto ops = fabric::uniform_all_to_all(8, 256 << 20, hal::AllToAllRole::plain);
  const auto alone = fabric::time_collective(fabric::make_cluster("gb300-nvl72", 1), ranks(8), ops);
  const SharedRun exact = all_to_all_beside_a_copy(false, alone * 3 / 2, 10);
  rt::Duration fast_last, fast_copy;
  {
    Rig r;
    auto g = r.coll.create_group("ep8", ranks(8));
    std::vector<hal::SharedCollectiveOp> parts;
    for (int rank = 0; rank < 8; ++rank) parts.push_back(part(ops, rank));
    rt::Time last, copied;
    r.rt.call_at(rt::Time::zero() + alone * 3 / 2, [&] {
      r.fab.transfer(fabric::Endpoint::gpu(0), fabric::Endpoint::gpu(1), 4'000'000'000ULL, hal::RdmaPath::nvlink, 1.0,
                     rt::Duration(), "kv", [&](const hal::HalError*) { copied = r.rt.now(); });
    });
    for (int rank = 0; rank < 8; ++rank) {
      g->arrive(rank, parts[static_cast<std::size_t>(rank)], [&, rank](const hal::HalError*) {
        g->repeat(rank, parts[static_cast<std::size_t>(rank)], 9, rt::Duration(), alone * 9, [&](const hal::HalError* e) {
          EXPECT_EQ(e, nullptr);
          last = std::max(last, r.rt.now());
        });
      });
    }
    r.rt.run();
    fast_last = last - rt::Time::zero();
    fast_copy = copied - rt::Time::zero() - alone * 3 / 2;
  }
  // Hand estimate: from 1.5 calls in, GPU 0's uplink and GPU 1's downlink carry 7 collective flows and
  // the copy: the calls' 8.5 remaining calls' worth there move at 7/8 of the rate: 1.5 + 8.5 * 8/7 = 11.2.
  const double a = static_cast<double>(alone.ns());
  EXPECT_NEAR(static_cast<double>(exact.collective.ns()), 11.2 * a, 0.2 * a);
  EXPECT_NEAR(static_cast<double>(fast_last.ns()), static_cast<double>(exact.collective.ns()),
              0.03 * static_cast<double>(exact.collective.ns()));
  EXPECT_NEAR(static_cast<double>(fast_copy.ns()), static_cast<double>(exact.copy.ns()),
              0.03 * static_cast<double>(exact.copy.ns()));
}

TEST(Collectives, DownLinkFailsTheCallNamingIt) {
  Rig r;
  for (int s = 0; s < 18; ++s) r.fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), true);
  auto g = r.coll.create_group("ep4", ranks(4));
  const auto ops = fabric::uniform_all_to_all(4, 1024, hal::AllToAllRole::moe_combine);
  std::vector<std::string> errors;
  for (int rank = 0; rank < 4; ++rank) {
    g->arrive(rank, part(ops, rank), [&](const hal::HalError* e) { errors.push_back(e ? e->what() : ""); });
  }
  r.rt.run();
  ASSERT_EQ(errors.size(), 4u);
  for (const auto& e : errors) EXPECT_NE(e.find("rack0/tray0/gpu1<->rack0/nvswitch0 is down"), std::string::npos) << e;
}

TEST(Collectives, AllToAllAfterALinkFailsIsPlannedOnTheFabricAsItIsNow) {
  auto ops_of = [](std::uint64_t bytes) { return fabric::uniform_all_to_all(4, bytes, hal::AllToAllRole::plain); };
  // What a group that never saw the failure takes (one runtime at a time).
  const auto rack = fabric::make_cluster("gb300-nvl72", 1);
  const rt::Duration before = fabric::time_collective(rack, ranks(4), ops_of(1 << 20));
  const rt::Duration after = fabric::time_collective(rack, ranks(4), ops_of(3 << 20));
  Rig r;
  auto g = r.coll.create_group("ep4", ranks(4));
  auto call = [&](std::uint64_t bytes, rt::Duration expected) {
    const auto ops = ops_of(bytes);
    std::vector<std::string> errors;
    const rt::Time start = r.rt.now();
    rt::Time last = start;
    for (int rank = 0; rank < 4; ++rank) {
      g->arrive(rank, part(ops, rank), [&](const hal::HalError* e) {
        errors.push_back(e ? e->what() : "");
        last = std::max(last, r.rt.now());
      });
    }
    r.rt.run();
    EXPECT_EQ(errors.size(), 4u);
    for (const auto& e : errors) {
      if (!e.empty()) return e;
    }
    EXPECT_EQ(last - start, expected) << bytes;
    return std::string();
  };
  EXPECT_EQ(call(1 << 20, before), "");
  for (int s = 0; s < 18; ++s) r.fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), true);
  const std::string down = call(2 << 20, rt::Duration());
  EXPECT_NE(down.find("rack0/tray0/gpu1<->rack0/nvswitch0 is down"), std::string::npos) << down;
  for (int s = 0; s < 18; ++s) r.fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), false);
  EXPECT_EQ(call(3 << 20, after), "");
}

TEST(Collectives, LinkLostMidCollectiveFailsEveryMember) {
  // On the fast path (priced, holding its links) and on the exact path (live flows) alike.
  for (const bool fast : {true, false}) {
    Rig r("gb300-nvl72", 1, fast);
    auto g = r.coll.create_group("ep4", ranks(4));
    const auto ops = fabric::uniform_all_to_all(4, 1 << 30, hal::AllToAllRole::plain);
    std::vector<std::string> errors;
    for (int rank = 0; rank < 4; ++rank) {
      g->arrive(rank, part(ops, rank), [&](const hal::HalError* e) { errors.push_back(e ? e->what() : ""); });
    }
    r.rt.call_at(rt::Time::from_ns(200'000), [&] { r.fab.set_element_down("rack0/nvswitch3", true); });
    r.rt.call_at(rt::Time::from_ns(300'000), [&] { r.fab.set_element_down("rack0/tray0/gpu2", true); });
    r.rt.run();
    ASSERT_EQ(errors.size(), 4u) << fast;
    for (const auto& e : errors) EXPECT_NE(e.find("rack0/tray0/gpu2 is down"), std::string::npos) << fast << ": " << e;
  }
}

TEST(Collectives, DisagreeingMembersFail) {
  Rig r;
  auto g = r.coll.create_group("tp2", ranks(2));
  auto ops = same_op(2, hal::CollectiveKind::all_reduce, 1024);
  ops[1].bytes = 2048;
  std::vector<std::string> errors;
  for (int rank = 0; rank < 2; ++rank) {
    g->arrive(rank, part(ops, rank), [&](const hal::HalError* e) { errors.push_back(e ? e->what() : ""); });
  }
  r.rt.run();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("rank 1 arrived with all_reduce 'op' of 2048 bytes"), std::string::npos) << errors[0];
  EXPECT_THROW(g->arrive(2, part(ops, 0), [](const hal::HalError*) {}), std::out_of_range);
}

TEST(Collectives, SendRecvMovesBytesBetweenPeers) {
  const auto spec = fabric::make_cluster("gb300-nvl72", 2);
  std::vector<hal::CollectiveOp> ops(2);
  for (auto& op : ops) {
    op.kind = hal::CollectiveKind::send_recv;
    op.name = "pp";
  }
  ops[0].peer = 1;
  ops[0].bytes = 1 << 30;
  // Ranks are GPU 0 (rack 0) and GPU 72 (rack 1): the bytes cross the CX8 NICs at 100 GB/s.
  const auto t = fabric::time_collective(spec, {0, 72}, ops);
  EXPECT_GT(t, rt::ms(10));
  EXPECT_LT(t, rt::ms(20));
}

namespace {

// Every member's completion of one call of `ops` on `r`'s group `g`, from the call's start.
rt::Duration timed_call(Rig& r, hal::CommGroup& g, const std::vector<hal::CollectiveOp>& ops) {
  const rt::Time start = r.rt.now();
  rt::Time last = start;
  for (int rank = 0; rank < static_cast<int>(ops.size()); ++rank) {
    g.arrive(rank, part(ops, rank), [&](const hal::HalError* e) {
      EXPECT_EQ(e, nullptr);
      last = std::max(last, r.rt.now());
    });
  }
  r.rt.run();
  return last - start;
}

// A bandwidth-bound EP8 all-to-all (64 MiB from every rank to every other) on a healthy rack, its time and
// the data part of it (what doubling the bytes adds).
struct HealthyAllToAll {
  std::vector<hal::CollectiveOp> ops = fabric::uniform_all_to_all(8, 64 << 20, hal::AllToAllRole::plain);
  rt::Duration healthy, data;
  HealthyAllToAll() {
    const auto rack = fabric::make_cluster("gb300-nvl72", 1);
    healthy = fabric::time_collective(rack, ranks(8), ops);
    data = fabric::time_collective(rack, ranks(8), fabric::uniform_all_to_all(8, 128 << 20, hal::AllToAllRole::plain)) -
           healthy;
  }
};

}  // namespace

TEST(Collectives, LostNvlinkPortsSlowTheAllToAllTheyCarry) {
  const HealthyAllToAll a2a;
  const auto& [ops, healthy, data] = a2a;
  for (const bool fast : {true, false}) {
    Rig r("gb300-nvl72", 1, fast);
    auto g = r.coll.create_group("ep8", ranks(8));
    // Fast: priced and cached on the healthy fabric. Exact: as flows (the same answer up to rounding).
    EXPECT_NEAR(static_cast<double>(timed_call(r, *g, ops).ns()), static_cast<double>(healthy.ns()), 1e-3 * healthy.ns());
    // GPU 1 loses 6 of its 18 ports: its 7 flows in and 7 out share 12/18 of its NVLink bandwidth, while
    // every other GPU's channels still carry at most 7 flows at full bandwidth, so GPU 1's flows set the
    // time: the data part takes 18/12 = 1.5 times as long (overhead and latency unchanged).
    for (int s = 0; s < 6; ++s) r.fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), true);
    const rt::Duration lost = timed_call(r, *g, ops);
    EXPECT_NEAR(static_cast<double>(lost.ns()), static_cast<double>((healthy + data / 2).ns()), 0.01 * data.ns()) << fast;
    for (int s = 0; s < 6; ++s) r.fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), false);
    // The ports back: the cached price (fast) holds again.
    EXPECT_NEAR(static_cast<double>(timed_call(r, *g, ops).ns()), static_cast<double>(healthy.ns()), 1e-3 * healthy.ns());
  }
}

TEST(Collectives, ADegradedNvlinkPortSlowsTheAllToAllByItsShare) {
  const HealthyAllToAll a2a;
  const auto& [ops, healthy, data] = a2a;
  for (const bool fast : {true, false}) {
    Rig r("gb300-nvl72", 1, fast);
    auto g = r.coll.create_group("ep8", ranks(8));
    EXPECT_NEAR(static_cast<double>(timed_call(r, *g, ops).ns()), static_cast<double>(healthy.ns()), 1e-3 * healthy.ns());
    // One of GPU 0's 18 ports at a quarter: its channels keep 17.25/18 of their bandwidth, so the data
    // part takes 18/17.25 as long (+4.3%).
    r.fab.degrade_link("rack0/tray0/gpu0", "rack0/nvswitch0", 0.25);
    const rt::Duration degraded = timed_call(r, *g, ops);
    const double expected = static_cast<double>(healthy.ns()) + static_cast<double>(data.ns()) * (18 / 17.25 - 1);
    EXPECT_NEAR(static_cast<double>(degraded.ns()), expected, 0.01 * data.ns()) << fast;
  }
}

// Two streams' all-to-alls over the same 8 GPUs (a two-batch-overlap step's micro-batches, or two pools
// sharing GPUs), B arriving `b_at` after A: how long each takes from its own arrival, on a rig of each
// fabric mode.
struct TwoStreams {
  rt::Duration a, b;
};
// Two groups of the same 8 GPUs (from `first`) on a rig: A's all-to-all from now, B's from b_at later.
TwoStreams two_overlapping_all_to_alls_on(Rig& r, int first, std::uint64_t bytes_per_pair, rt::Duration b_at) {
  const auto ops = fabric::uniform_all_to_all(8, bytes_per_pair, hal::AllToAllRole::moe_dispatch);
  auto a = r.coll.create_group("a", ranks(8, first));
  auto b = r.coll.create_group("b", ranks(8, first));
  const rt::Time start = r.rt.now();
  rt::Time a_done, b_done;
  for (int rank = 0; rank < 8; ++rank) {
    a->arrive(rank, part(ops, rank), [&](const hal::HalError* e) {
      EXPECT_EQ(e, nullptr);
      a_done = std::max(a_done, r.rt.now());
    });
  }
  r.rt.call_at(start + b_at, [&] {
    for (int rank = 0; rank < 8; ++rank) {
      b->arrive(rank, part(ops, rank), [&](const hal::HalError* e) {
        EXPECT_EQ(e, nullptr);
        b_done = std::max(b_done, r.rt.now());
      });
    }
  });
  r.rt.run();
  return {a_done - start, b_done - start - b_at};
}

TwoStreams two_overlapping_all_to_alls(bool fast, std::uint64_t bytes_per_pair, rt::Duration b_at) {
  Rig r("gb300-nvl72", 1, fast);
  return two_overlapping_all_to_alls_on(r, 0, bytes_per_pair, b_at);
}

TEST(Collectives, OverlappingCallsOfTwoStreamsShareTheirLinksAsTheExactModeSharesThem) {
  // 100 KB per pair is mostly fixed cost (launch, sync), 1 MB is half and half, 64 MB is bandwidth-bound;
  // B arrives with A or a quarter of the way through it. The fast mode holds A's links for its priced
  // call and turns what is left of its bytes into flows when B's flows start beside them.
  for (const std::uint64_t bytes : {100'000ULL, 1'000'000ULL, 64'000'000ULL}) {
    const auto ops = fabric::uniform_all_to_all(8, bytes, hal::AllToAllRole::moe_dispatch);
    const auto alone = fabric::time_collective(fabric::make_cluster("gb300-nvl72", 1), ranks(8), ops);
    for (const double at : {0.0, 0.25}) {
      SCOPED_TRACE(std::to_string(bytes) + " bytes per pair, B at " + std::to_string(at) + " of A");
      const rt::Duration b_at = rt::ns(static_cast<std::int64_t>(at * static_cast<double>(alone.ns())));
      const TwoStreams fast = two_overlapping_all_to_alls(true, bytes, b_at);
      const TwoStreams exact = two_overlapping_all_to_alls(false, bytes, b_at);
      EXPECT_NEAR(static_cast<double>(fast.a.ns()), static_cast<double>(exact.a.ns()), 0.03 * static_cast<double>(exact.a.ns()));
      EXPECT_NEAR(static_cast<double>(fast.b.ns()), static_cast<double>(exact.b.ns()), 0.03 * static_cast<double>(exact.b.ns()));
      if (at == 0) {
        // Hand estimate: arriving together, both launch together, then move twice the bytes through each
        // GPU's NVLink ports (7 peers' at the port's rate each) and are done once the last byte has
        // crossed and the sync has passed: launch + latency + max(sync, 2 x wire). At 100 KB twice the
        // wire (2 x 1.1 us) still fits in the 7.5 us sync, so each takes its time alone.
        Rig r;
        const auto& k = fabric::all_to_all_kernel(r.fab.profile().collectives, hal::AllToAllRole::moe_dispatch);
        const double wire_ns = 7.0 * static_cast<double>(bytes) / k.efficiency /
                               r.fab.flows().capacity(r.fab.topology().gpu(0).nvl_up) * 1e9;
        std::vector<int> route;
        const double latency_ns = static_cast<double>(r.fab.append_gpu_route(0, 1, route).ns());
        const double launch_ns = static_cast<double>((k.launch + k.per_peer * 7).ns());
        const double sync_ns = static_cast<double>(k.sync.ns());
        const double expected = launch_ns + latency_ns + std::max(sync_ns, 2 * wire_ns);
        EXPECT_NEAR(static_cast<double>(exact.a.ns()), expected, 0.02 * expected);
        EXPECT_NEAR(static_cast<double>(exact.b.ns()), expected, 0.02 * expected);
      }
    }
  }
}

TEST(Collectives, HoldsOnOtherChannelsOrLostEarlierLeaveOverlappingCallsAsTheyAreAlone) {
  // The fabric finds the calls held on a channel from a list per channel. Calls held in another rack
  // must not count on this rack's channels, and a call lost to a link failure must leave its channels'
  // lists: either way B's overlapping call meets A's as it does on a fresh rack, to the nanosecond.
  constexpr std::uint64_t kBytes = 64'000'000;
  const rt::Duration b_at = rt::us(200);
  const TwoStreams fresh = two_overlapping_all_to_alls(true, kBytes, b_at);
  {
    Rig r("gb300-nvl72", 2);
    auto other = r.coll.create_group("rack0", ranks(8));
    const auto ops = fabric::uniform_all_to_all(8, 1ULL << 30, hal::AllToAllRole::moe_dispatch);
    int done = 0;
    for (int rank = 0; rank < 8; ++rank) other->arrive(rank, part(ops, rank), [&](const hal::HalError*) { ++done; });
    const TwoStreams beside = two_overlapping_all_to_alls_on(r, 72, kBytes, b_at);
    EXPECT_EQ(done, 8);
    EXPECT_EQ(beside.a, fresh.a);
    EXPECT_EQ(beside.b, fresh.b);
  }
  {
    Rig r;
    auto lost = r.coll.create_group("lost", ranks(8));
    const auto ops = fabric::uniform_all_to_all(8, 1ULL << 30, hal::AllToAllRole::moe_dispatch);
    int failed = 0;
    for (int rank = 0; rank < 8; ++rank) lost->arrive(rank, part(ops, rank), [&](const hal::HalError* e) { failed += e ? 1 : 0; });
    r.rt.call_at(rt::Time::from_ns(200'000), [&] { r.fab.set_element_down("rack0/tray0/gpu2", true); });
    r.rt.run();
    EXPECT_EQ(failed, 8);
    r.fab.set_element_down("rack0/tray0/gpu2", false);
    const TwoStreams after = two_overlapping_all_to_alls_on(r, 0, kBytes, b_at);
    EXPECT_EQ(after.a, fresh.a);
    EXPECT_EQ(after.b, fresh.b);
  }
}

}  // namespace collectives_test
