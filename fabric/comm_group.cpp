#include "fabric/comm_group.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

namespace nvl::fabric {

namespace {
std::string_view kind_name(hal::CollectiveKind k) {
  switch (k) {
    case hal::CollectiveKind::all_to_all: return "all_to_all";
    case hal::CollectiveKind::all_reduce: return "all_reduce";
    case hal::CollectiveKind::all_gather: return "all_gather";
    case hal::CollectiveKind::reduce_scatter: return "reduce_scatter";
    case hal::CollectiveKind::broadcast: return "broadcast";
    case hal::CollectiveKind::send_recv: return "send_recv";
  }
  return "collective";
}
}  // namespace

FabricCommGroup::FabricCommGroup(Fabric& fabric, CollectivePricer& pricer, std::string name,
                                 std::vector<hal::DeviceId> members, bool fast_path)
    : fabric_(fabric),
      pricer_(pricer),
      name_(std::move(name)),
      members_(std::move(members)),
      fast_path_(fast_path),
      next_call_(members_.size(), 0) {
  if (members_.empty()) throw std::invalid_argument("comm group '" + name_ + "' has no members");
  for (hal::DeviceId d : members_) {
    if (d < 0 || d >= fabric_.topology().gpu_count()) {
      throw std::invalid_argument("comm group '" + name_ + "': no GPU " + std::to_string(d));
    }
  }
}

void FabricCommGroup::arrive(int rank, const hal::CollectiveOp& op, hal::CollectiveDone done) {
  const int n = static_cast<int>(members_.size());
  if (rank < 0 || rank >= n) {
    throw std::out_of_range("comm group '" + name_ + "': rank " + std::to_string(rank) + " of " + std::to_string(n));
  }
  const std::uint64_t k = next_call_[static_cast<std::size_t>(rank)]++;
  while (calls_.size() <= k - first_call_) {
    calls_.emplace_back();
    calls_.back().ops.resize(static_cast<std::size_t>(n));
    calls_.back().done.resize(static_cast<std::size_t>(n));
  }
  Call& call = calls_[static_cast<std::size_t>(k - first_call_)];
  call.ops[static_cast<std::size_t>(rank)] = op;
  call.done[static_cast<std::size_t>(rank)] = std::move(done);
  ++call.arrived;
  while (!calls_.empty() && calls_.front().arrived == n) {
    Call c = std::move(calls_.front());
    calls_.pop_front();
    ++first_call_;
    start(c);
  }
}

std::optional<std::string> FabricCommGroup::disagreement(const std::vector<hal::CollectiveOp>& ops) const {
  const auto& a = ops.front();
  for (std::size_t r = 0; r < ops.size(); ++r) {
    const auto& b = ops[r];
    const auto desc = [](const hal::CollectiveOp& o) {
      return std::string(kind_name(o.kind)) + " '" + o.name + "' of " + std::to_string(o.bytes) + " bytes";
    };
    const bool per_member_bytes = a.kind == hal::CollectiveKind::send_recv || a.kind == hal::CollectiveKind::all_to_all;
    if (b.kind != a.kind || b.name != a.name || (!per_member_bytes && b.bytes != a.bytes) || b.root != a.root ||
        b.role != a.role) {
      return "rank " + std::to_string(r) + " arrived with " + desc(b) + " but rank 0 with " + desc(a);
    }
    if (a.kind == hal::CollectiveKind::all_to_all && b.send_bytes.size() != ops.size()) {
      return "rank " + std::to_string(r) + " gave " + std::to_string(b.send_bytes.size()) +
             " send sizes for a group of " + std::to_string(ops.size());
    }
    if (a.kind == hal::CollectiveKind::send_recv && b.peer >= static_cast<int>(ops.size())) {
      return "rank " + std::to_string(r) + " sends to rank " + std::to_string(b.peer) + " outside the group";
    }
  }
  if (a.root < 0 || a.root >= static_cast<int>(ops.size())) return "broadcast root " + std::to_string(a.root) + " outside the group";
  return std::nullopt;
}

std::vector<std::uint64_t> FabricCommGroup::signature(const std::vector<hal::CollectiveOp>& ops) const {
  const auto& a = ops.front();
  std::vector<std::uint64_t> key{static_cast<std::uint64_t>(a.kind), static_cast<std::uint64_t>(a.role), a.bytes,
                                 static_cast<std::uint64_t>(a.root)};
  if (a.kind == hal::CollectiveKind::all_to_all) {
    key.reserve(key.size() + ops.size() * ops.size());
    for (const auto& o : ops) key.insert(key.end(), o.send_bytes.begin(), o.send_bytes.end());
  } else if (a.kind == hal::CollectiveKind::send_recv) {
    for (const auto& o : ops) {
      key.push_back(o.bytes);
      key.push_back(static_cast<std::uint64_t>(o.peer + 1));
    }
  }
  return key;
}

std::size_t FabricCommGroup::SignatureHash::operator()(const std::vector<std::uint64_t>& key) const {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the words
  for (std::uint64_t v : key) h = (h ^ v) * 0x100000001b3ULL;
  return static_cast<std::size_t>(h);
}

bool FabricCommGroup::fast_ok(const std::vector<int>& channels) const {
  const rt::Time now = fabric_.runtime().now();
  return std::all_of(channels.begin(), channels.end(), [&](int c) { return fabric_.healthy(c) && fabric_.idle(c, now); });
}

void FabricCommGroup::fail_all(std::vector<hal::CollectiveDone>& done, const hal::HalError& e) {
  ++stats_.failed;
  fabric_.runtime().record("fabric", "collective_failed", {{"group", name_}, {"error", e.what()}},
                           rt::Severity::warning);
  for (auto& d : done) {
    if (d) fabric_.runtime().call_after(rt::Duration(), [d = std::move(d), e] { d(&e); });
  }
}

void FabricCommGroup::start(Call& call) {
  ++stats_.calls;
  std::vector<hal::CollectiveOp> ops;
  ops.reserve(call.ops.size());
  for (auto& o : call.ops) ops.push_back(std::move(*o));
  const std::string op_name = "collective " + name_ + "/" + ops.front().name;
  if (auto why = disagreement(ops)) {
    fail_all(call.done, hal::HalError(-1, op_name, hal::Xid::none, *why));
    return;
  }
  std::vector<std::uint64_t> key;
  if (fast_path_) {
    key = signature(ops);
    const auto it = cache_.find(key);
    if (it != cache_.end() && fast_ok(it->second.channels)) {
      finish_fast(it->second, std::move(call.done), op_name);
      return;
    }
  }
  CollectivePlan plan;
  try {
    plan = plan_collective(fabric_, members_, ops);
  } catch (const hal::HalError& e) {
    fail_all(call.done, hal::HalError(e.device(), op_name, e.cause(), e.what()));
    return;
  }
  if (fast_path_) {
    std::vector<int> channels;
    for (const auto& f : plan.flows) channels.insert(channels.end(), f.channels.begin(), f.channels.end());
    std::sort(channels.begin(), channels.end());
    channels.erase(std::unique(channels.begin(), channels.end()), channels.end());
    if (fast_ok(channels)) {
      ++stats_.priced;
      Cached c{pricer_.price(plan, static_cast<int>(members_.size()), fabric_), std::move(channels)};
      const auto it = cache_.insert_or_assign(std::move(key), std::move(c)).first;
      finish_fast(it->second, std::move(call.done), op_name);
      return;
    }
  }
  run_exact(plan, std::move(call.done), op_name);
}

void FabricCommGroup::finish_fast(const Cached& c, std::vector<hal::CollectiveDone> done, const std::string& op_name) {
  ++stats_.fast;
  struct Run {
    std::vector<hal::CollectiveDone> done;
    std::vector<rt::TimerHandle> timers;
    std::uint64_t hold = 0;
    std::size_t pending = 0;
  };
  rt::Runtime& rt = fabric_.runtime();
  const rt::Time now = rt.now();
  auto run = std::make_shared<Run>();
  run->done = std::move(done);
  // Members finishing at the same time share one event (a symmetric collective has one).
  std::map<std::int64_t, std::vector<std::size_t>> by_time;
  for (std::size_t r = 0; r < run->done.size(); ++r) by_time[c.done[r].ns()].push_back(r);
  run->pending = by_time.size();
  for (auto& [t, members] : by_time) {
    run->timers.push_back(rt.call_at(now + rt::ns(t), [this, run, members = std::move(members)] {
      if (--run->pending == 0) fabric_.release(run->hold);
      for (std::size_t m : members) {
        if (run->done[m]) std::exchange(run->done[m], nullptr)(nullptr);
      }
    }));
  }
  // A link lost under the collective fails the members not yet done, naming it.
  const hal::DeviceId first = members_.front();
  run->hold = fabric_.hold(c.channels, now + rt::ns(by_time.rbegin()->first), [this, run, op_name, first](int channel) {
    for (auto& t : run->timers) t.cancel();
    const hal::HalError e = fabric_.error_for_channel(channel, op_name, first);
    ++stats_.failed;
    for (auto& d : run->done) {
      if (d) std::exchange(d, nullptr)(&e);
    }
  });
}

void FabricCommGroup::run_exact(const CollectivePlan& plan, std::vector<hal::CollectiveDone> done,
                                const std::string& op_name) {
  ++stats_.exact;
  struct Run {
    std::vector<hal::CollectiveDone> done;
    std::vector<int> outstanding;
    std::vector<char> finished;
    rt::Time sync_at;
    bool failed = false;
  };
  rt::Runtime& rt = fabric_.runtime();
  auto run = std::make_shared<Run>();
  run->done = std::move(done);
  run->outstanding.assign(members_.size(), 0);
  run->finished.assign(members_.size(), 0);
  const rt::Time data_at = rt.now() + plan.overhead;
  run->sync_at = data_at + plan.sync_latency;
  for (const auto& f : plan.flows) {
    ++run->outstanding[static_cast<std::size_t>(f.src_rank)];
    if (f.dst_rank != f.src_rank) ++run->outstanding[static_cast<std::size_t>(f.dst_rank)];
  }
  auto complete = [&rt](const std::shared_ptr<Run>& r, int m) {
    auto um = static_cast<std::size_t>(m);
    if (r->failed || r->finished[um] || r->outstanding[um] > 0) return;
    r->finished[um] = 1;
    rt.call_at(std::max(rt.now(), r->sync_at), [r, um] {
      if (r->done[um]) r->done[um](nullptr);
    });
  };
  for (std::size_t m = 0; m < members_.size(); ++m) complete(run, static_cast<int>(m));
  const std::vector<hal::DeviceId> members = members_;
  rt.call_at(data_at, [this, run, flows = plan.flows, complete, op_name, members]() mutable {
    for (auto& f : flows) {
      const int src = f.src_rank;
      const int dst = f.dst_rank;
      fabric_.flows().start(std::move(f.channels), f.wire_bytes, f.latency,
                            [this, run, src, dst, complete, op_name, members](int failed) {
                              if (failed != FlowModel::kNoFailure) {
                                if (run->failed) return;
                                run->failed = true;
                                const hal::HalError e = fabric_.error_for_channel(
                                    failed, op_name, members[static_cast<std::size_t>(src)]);
                                for (std::size_t m = 0; m < run->done.size(); ++m) {
                                  if (run->finished[m]) continue;
                                  run->finished[m] = 1;
                                  if (run->done[m]) run->done[m](&e);
                                }
                                ++stats_.failed;
                                return;
                              }
                              --run->outstanding[static_cast<std::size_t>(src)];
                              if (dst != src) --run->outstanding[static_cast<std::size_t>(dst)];
                              complete(run, src);
                              if (dst != src) complete(run, dst);
                            });
    }
  });
}

}  // namespace nvl::fabric
