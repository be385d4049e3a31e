#pragma once
// report.json's timeline: the interval, the sample count and every series the HTML report plots
// (timeline.series), so that they can be scripted without parsing the HTML.
#include <nlohmann/json.hpp>

#include "emu/report/timeline.h"

namespace nvl::emu {

// {"interval_s", "samples", "series": {"t_s": [...], "input_tokens_per_s": [...], "output_tokens_per_s",
// "waiting", "running", "kv_lookup_tokens", "kv_hit_tokens": {tier: [...]}, "link_mean": {class: [...]},
// "link_peak": {class: [...]}, "pools": {pool: {"waiting", "running", "kv_used"}}, "ttft_split_s": {part:
// [...]}, "gpu_busy": {gpu: [...]}}}: one value per sample in every list (NaN, a gap, is null), rounded to
// 6 significant digits (the figures carry no more; the file stays a few MB for an hour of 1 s samples).
nlohmann::json to_json(const Timeline& t);

// The timeline back from report.json's "timeline" (null values are gaps: NaN), GPUs' busy shares left
// out (the object's keys lose the GPUs' order). Throws
// std::invalid_argument naming the series that is missing or not a list of numbers; series added
// after schema version 3 ("pools", "ttft_split_s") may be missing.
Timeline timeline_from_json(const nlohmann::json& timeline);

}  // namespace nvl::emu
