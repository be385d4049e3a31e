#include "emu/faults/fault_injector.h"

#include <algorithm>
#include <map>

namespace nvl::emu {

namespace {
// Which DP rank (the router's numbering) and which prefill instance each GPU of the fleet serves.
FaultTimeline timeline_of(EmulatedCluster& cluster, const engine::PdSystem& system) {
  std::map<std::int64_t, std::int64_t> rank_of_gpu, prefill_of_gpu;
  for (int g = 0; g < cluster.fleet().size(); ++g) {
    if (const auto r = system.rank_of_gpu(g)) rank_of_gpu[g] = *r;
    if (const auto p = system.prefill_of_gpu(g)) prefill_of_gpu[g] = static_cast<std::int64_t>(*p);
  }
  return FaultTimeline(std::move(rank_of_gpu), std::move(prefill_of_gpu));
}
}  // namespace

FaultInjector::FaultInjector(rt::Runtime& rt, const FaultPlan& plan, rt::Time run_end, EmulatedCluster& cluster,
                             engine::PdSystem& system)
    : rt_(rt), cluster_(cluster), system_(system), timeline_(timeline_of(cluster, system)) {
  for (const ScheduledFault& f : plan.scheduled) schedule(f, false);
  rt::Rng& rng = rt.rng("faults");
  for (const RandomFault& r : plan.random) {
    // A Poisson process of the given rate over [start_s, end_s).
    const double end_s = std::min(r.end_s.value_or(run_end.since_start().seconds()), run_end.since_start().seconds());
    const double mean_gap_s = 3'600.0 / r.rate_per_hour;
    double t = r.start_s;
    for (;;) {
      t += rng.exponential(mean_gap_s);
      if (t >= end_s) break;
      ScheduledFault f;
      f.kind = r.kind;
      f.at_s = t;
      f.params = r.params;
      if (!r.targets.empty()) {
        f.target = r.targets[static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(r.targets.size()) - 1))];
      }
      schedule(f, true);
    }
  }
}

void FaultInjector::schedule(const ScheduledFault& f, bool random) {
  ++scheduled_;
  rt_.call_at(rt::Time::zero() + rt::from_seconds(f.at_s), [this, f, random] { apply(f, random); });
}

const std::string& FaultInjector::element_name(int element) const {
  return cluster_.fabric().topology().elements().at(static_cast<std::size_t>(element)).name;
}

void FaultInjector::undo_after(const ScheduledFault& f, std::size_t entry, std::function<void()> undo,
                               const std::string& how) {
  if (!f.params.duration_s) return;
  rt_.call_after(rt::from_seconds(*f.params.duration_s), [this, entry, undo = std::move(undo), how] {
    undo();
    timeline_.recovered(entry, rt_.now(), how);
  });
}

void FaultInjector::apply(const ScheduledFault& f, bool random) {
  const std::size_t entry = timeline_.hit(rt_.now(), f.kind, f.target, random);
  rt_.record("faults", "injected", {{"kind", to_string(f.kind)}, {"target", timeline_.at(entry).target}, {"random", random}},
             rt::Severity::warning);
  fabric::Fabric& fabric = cluster_.fabric();
  const auto gpu = [&]() -> fakegpu::FakeDevice& { return cluster_.fleet().device(static_cast<hal::DeviceId>(f.target.gpu)); };
  const auto gpu_id = static_cast<hal::DeviceId>(f.target.gpu);
  switch (f.kind) {
    case FaultKind::gpu_lost:
      gpu().inject_gpu_lost();
      return;
    case FaultKind::gpu_ecc:
      gpu().inject_ecc_error();
      return;
    case FaultKind::nvlink_error: {
      const fabric::Topology& topo = fabric.topology();
      const int g = topo.gpu(static_cast<int>(f.target.gpu)).element;
      std::vector<int> switches;
      for (int l : topo.links_of(g)) {
        const fabric::Link& link = topo.links()[static_cast<std::size_t>(l)];
        if (link.kind != fabric::LinkKind::nvlink) continue;
        const int other = link.a == g ? link.b : link.a;
        if (std::find(switches.begin(), switches.end(), other) == switches.end()) switches.push_back(other);
      }
      switches.resize(std::min(switches.size(), static_cast<std::size_t>(f.params.links)));
      gpu().inject_nvlink_error(0);
      const std::string name = element_name(g);
      for (int s : switches) {
        if (f.params.degrade) {
          fabric.degrade_link(name, element_name(s), f.params.factor);
        } else {
          fabric.set_link_down(name, element_name(s), true);
        }
      }
      timeline_.at(entry).detail["switches"] = switches.size();
      undo_after(f, entry, [this, &fabric, name, switches, degrade = f.params.degrade] {
        for (int s : switches) {
          if (degrade) {
            fabric.degrade_link(name, element_name(s), 1.0);
          } else {
            fabric.set_link_down(name, element_name(s), false);
          }
        }
      }, "NVLink ports back to full bandwidth");
      return;
    }
    case FaultKind::link_degrade:
      fabric.degrade_link(f.target.a, f.target.b, f.params.factor);
      undo_after(f, entry, [&fabric, f] { fabric.degrade_link(f.target.a, f.target.b, 1.0); }, "link back to full bandwidth");
      return;
    case FaultKind::link_flap: {
      const rt::Duration down = rt::from_seconds(f.params.down_s), up = rt::from_seconds(f.params.up_s);
      fabric.flap_link(f.target.a, f.target.b, down, up, static_cast<int>(f.params.cycles));
      // Up for good after the last down period.
      rt_.call_after((down + up) * (f.params.cycles - 1) + down,
                     [this, entry] { timeline_.recovered(entry, rt_.now(), "link up after its last flap"); });
      return;
    }
    case FaultKind::nic_down:
      fabric.set_element_down(f.target.a, true);
      undo_after(f, entry, [&fabric, f] { fabric.set_element_down(f.target.a, false); }, "NIC up");
      return;
    case FaultKind::partition: {
      const std::vector<hal::HostId> a(f.target.hosts_a.begin(), f.target.hosts_a.end());
      const std::vector<hal::HostId> b(f.target.hosts_b.begin(), f.target.hosts_b.end());
      fabric.partition(a, b);
      undo_after(f, entry, [&fabric] { fabric.heal_partition(); }, "partition healed");
      return;
    }
    case FaultKind::straggler:
      gpu().throttle(f.params.factor, rt::from_seconds(*f.params.duration_s));
      return;
    case FaultKind::grace_memory_error: {
      // The host reports the uncorrectable memory error (machine check) to the worker at once.
      const std::int64_t blocks = system_.grace_memory_error(*system_.rank_of_gpu(gpu_id));
      timeline_.at(entry).detail["grace_blocks_lost"] = blocks;
      timeline_.detected(entry, rt_.now(), "machine_check");
      timeline_.recovered(entry, rt_.now(), "lost blocks dropped from the prefix index; hits on them recomputed");
      return;
    }
    case FaultKind::worker_crash:
      if (const auto rank = system_.rank_of_gpu(gpu_id)) {
        system_.crash_worker(*rank);
      } else if (const auto instance = system_.prefill_of_gpu(gpu_id)) {
        system_.crash_prefill_worker(*instance);  // one TP group: a process of it dying takes the instance down
      }
      return;
    case FaultKind::router_restart:
      system_.restart_router();
      timeline_.detected(entry, rt_.now(), "restart");
      timeline_.recovered(entry, rt_.now(), "prefix index rebuilt from the ranks' republished KV events");
      return;
  }
}

}  // namespace nvl::emu
