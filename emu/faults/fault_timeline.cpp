#include "emu/faults/fault_timeline.h"

#include <algorithm>

namespace nvl::emu {

std::size_t FaultTimeline::hit(rt::Time t, FaultKind kind, const FaultTarget& target, bool random) {
  FaultEntry e;
  e.kind = kind;
  e.target = target.type == FaultTarget::Type::none ? "router" : target.text;
  e.gpu = target.type == FaultTarget::Type::gpu ? target.gpu : -1;
  if (const auto r = rank_of_gpu_.find(e.gpu); r != rank_of_gpu_.end()) e.rank = r->second;
  if (const auto p = prefill_of_gpu_.find(e.gpu); p != prefill_of_gpu_.end()) e.prefill_instance = p->second;
  e.random = random;
  e.hit = t;
  entries_.push_back(std::move(e));
  return entries_.size() - 1;
}

void FaultTimeline::detected(std::size_t i, rt::Time t, std::string by) {
  FaultEntry& e = entries_.at(i);
  e.detected = t;
  e.detected_by = std::move(by);
}

void FaultTimeline::recovered(std::size_t i, rt::Time t, std::string how) {
  FaultEntry& e = entries_.at(i);
  e.recovered = t;
  e.recovery = std::move(how);
}

namespace {
// The faults that take a worker down until it is declared dead and, unless its GPU is lost, back.
const std::initializer_list<FaultKind> kWorkerFaults = {FaultKind::gpu_lost, FaultKind::gpu_ecc, FaultKind::worker_crash};

bool is_worker_fault(FaultKind k) { return std::find(kWorkerFaults.begin(), kWorkerFaults.end(), k) != kWorkerFaults.end(); }
}  // namespace

FaultEntry* FaultTimeline::open(std::int64_t rank, std::initializer_list<FaultKind> kinds, bool detected) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->rank < 0 || it->rank != rank || std::find(kinds.begin(), kinds.end(), it->kind) == kinds.end()) continue;
    if (detected ? (it->detected && !it->recovered) : !it->detected) return &*it;
  }
  return nullptr;
}

FaultEntry* FaultTimeline::declared(std::int64_t rank, std::int64_t prefill) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    const bool on = prefill >= 0 ? it->prefill_instance == prefill : it->rank >= 0 && it->rank == rank;
    if (on && is_worker_fault(it->kind) && it->detected) return &*it;
  }
  return nullptr;
}

// A prefill instance's records (the first instance's name none): one TP group over its GPUs, so a
// declaration answers every fault on any of them that is still open.
void FaultTimeline::on_prefill_record(rt::Time t, std::string_view kind, const nlohmann::json& fields) {
  const std::int64_t instance = fields.contains("instance") ? fields.at("instance").get<std::int64_t>() : 0;
  const auto each = [&](auto&& fn) {
    for (FaultEntry& e : entries_) {
      if (e.prefill_instance == instance && is_worker_fault(e.kind)) fn(e);
    }
  };
  if (kind == "prefill_worker_declared_dead") {
    each([&](FaultEntry& e) {
      if (e.detected) return;
      e.detected = t;
      e.detected_by = fields.at("how").get<std::string>();
      e.detail["declared_why"] = fields.at("why");
    });
  } else if (kind == "prefill_worker_removed") {
    if (FaultEntry* e = declared(-1, instance)) e->requests_affected += fields.at("requests").get<std::int64_t>();
  } else if (kind == "local_prefill_instead") {
    if (FaultEntry* e = declared(-1, instance)) ++e->requests_affected;
  } else if (kind == "prefill_worker_out") {
    each([&](FaultEntry& e) {
      if (e.kind != FaultKind::gpu_lost || e.recovered) return;
      if (!e.detected) {
        e.detected = t;  // lost while the worker was out already: its reset found it
        e.detected_by = "gpu_reset";
      }
      e.recovered = t;
      e.recovery = "prefill instance out for the rest of the run (its TP group cannot run without the GPU): its "
                   "long prompts go to the other prefill instances, or to local prefill when none is up";
    });
  } else if (kind == "prefill_worker_back") {
    each([&](FaultEntry& e) {
      if (!e.detected || e.recovered || e.kind == FaultKind::gpu_lost) return;
      e.recovered = t;
      e.recovery = e.kind == FaultKind::gpu_ecc
                       ? "drained, GPU reset, prefill worker back: the router sends long prompts to it again"
                       : "worker restarted (its queue and KV lost) and back: the router sends long prompts to it again";
    });
  }
}

void FaultTimeline::on_record(rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& fields) {
  if ((source == "health" && kind.starts_with("prefill_worker_")) ||
      (source == "pd" && (kind == "prefill_worker_removed" || kind == "local_prefill_instead"))) {
    on_prefill_record(t, kind, fields);
  } else if (source == "pd" && kind == "request_redirected") {
    // Routed to the rank before it was declared, it went elsewhere.
    if (FaultEntry* e = declared(fields.at("dead_rank").get<std::int64_t>())) ++e->requests_affected;
  } else if (source == "health" && kind == "rank_declared_dead") {
    if (FaultEntry* e = open(fields.at("rank").get<std::int64_t>(), kWorkerFaults, false)) {
      e->detected = t;
      e->detected_by = fields.at("how").get<std::string>();
      e->detail["declared_why"] = fields.at("why");
    }
  } else if (source == "normal-group" && kind == "rank_removed") {
    if (FaultEntry* e = open(fields.at("rank").get<std::int64_t>(), kWorkerFaults, true)) {
      e->requests_affected += fields.at("requests").get<std::int64_t>();
      if (e->kind == FaultKind::gpu_lost) {
        e->recovered = t;
        e->recovery = "rank removed: its requests moved to healthy ranks, the EP group went on without it";
      }
    }
  } else if (source == "eplb" && kind == "experts_replaced") {
    if (FaultEntry* e = open(fields.at("rank").get<std::int64_t>(), kWorkerFaults, true)) e->detail["experts"] = fields;
    else if (FaultEntry* lost = open(fields.at("rank").get<std::int64_t>(), {FaultKind::gpu_lost}, false)) lost->detail["experts"] = fields;
  } else if (source == "health" && kind == "rank_back") {
    if (FaultEntry* e = open(fields.at("rank").get<std::int64_t>(), {FaultKind::gpu_ecc, FaultKind::worker_crash}, true)) {
      e->recovered = t;
      e->recovery = e->kind == FaultKind::gpu_ecc ? "drained, reset and back in the group" : "worker restarted and back in the group";
    }
  } else if (kind == "thermal_throttle_end" && source.starts_with("gpu")) {
    const std::int64_t gpu = std::stoll(std::string(source.substr(3)));
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (it->kind == FaultKind::straggler && it->gpu == gpu && !it->recovered) {
        it->recovered = t;
        it->recovery = "clock back to full speed";
        break;
      }
    }
  }
}

nlohmann::json FaultTimeline::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  const auto s = [](const std::optional<rt::Time>& t) {
    return t ? nlohmann::json(t->since_start().seconds()) : nlohmann::json(nullptr);
  };
  for (const FaultEntry& e : entries_) {
    nlohmann::json j;
    j["kind"] = std::string(to_string(e.kind));
    j["target"] = e.target;
    j["random"] = e.random;
    j["hit_s"] = e.hit.since_start().seconds();
    j["detected_s"] = s(e.detected);
    j["detected_by"] = e.detected_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.detected_by);
    j["detection_delay_s"] = e.detected ? nlohmann::json((*e.detected - e.hit).seconds()) : nlohmann::json(nullptr);
    j["recovered_s"] = s(e.recovered);
    j["recovery"] = e.recovery.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.recovery);
    j["recovery_time_s"] = e.recovered ? nlohmann::json((*e.recovered - e.hit).seconds()) : nlohmann::json(nullptr);
    j["requests_affected"] = e.requests_affected;
    j["detail"] = e.detail;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace nvl::emu
