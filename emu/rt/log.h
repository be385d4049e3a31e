#pragma once
// spdlog loggers stamped with the runtime's time (virtual or real), never the host clock.
// Pattern: "[12.000345678] [router] [info] message"; the level comes from NVL_LOG (trace..off), default info.
#include <memory>
#include <string>

#include <spdlog/logger.h>
#include <spdlog/sinks/sink.h>

#include "emu/rt/runtime.h"

namespace nvl::rt {

// Logs to stderr unless given a sink; the sink gets this logger's formatter, so give each logger its own.
std::shared_ptr<spdlog::logger> make_logger(Runtime& rt, const std::string& name,
                                            spdlog::sink_ptr sink = nullptr);
// NVL_LOG, checked: an unknown level name is a UsageError naming the variable.
spdlog::level::level_enum log_level_from_env();

}  // namespace nvl::rt
