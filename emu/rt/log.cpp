#include "emu/rt/log.h"

#include <cstdlib>
#include <string_view>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "emu/rt/errors.h"

namespace nvl::rt {
namespace {

// %* in the pattern: the runtime's now().
class RuntimeTimeFlag : public spdlog::custom_flag_formatter {
 public:
  explicit RuntimeTimeFlag(Runtime& rt) : rt_(rt) {}
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string s = to_string(rt_.now());
    dest.append(s.data(), s.data() + s.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<RuntimeTimeFlag>(rt_); }

 private:
  Runtime& rt_;
};

}  // namespace

spdlog::level::level_enum log_level_from_env() {
  const char* value = std::getenv("NVL_LOG");
  if (value == nullptr || *value == '\0') return spdlog::level::info;
  const auto level = spdlog::level::from_str(value);
  if (level == spdlog::level::off && std::string_view(value) != "off") {
    throw UsageError(std::string("environment variable NVL_LOG=") + value +
                     ": expected one of trace, debug, info, warn, error, critical, off");
  }
  return level;
}

std::shared_ptr<spdlog::logger> make_logger(Runtime& rt, const std::string& name, spdlog::sink_ptr sink) {
  // One sink per logger: spdlog formatters live on sinks, and each logger stamps its own runtime's time.
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<RuntimeTimeFlag>('*', rt).set_pattern("[%*] [%n] [%^%l%$] %v");
  logger->set_formatter(std::move(formatter));
  logger->set_level(log_level_from_env());
  return logger;
}

}  // namespace nvl::rt
