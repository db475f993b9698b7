#include "base/logging.h"

#include <mutex>

#include "spdlog/cfg/env.h"
#include "spdlog/sinks/stdout_color_sinks.h"

namespace nativeprof {
namespace {

std::mutex g_mu;
spdlog::level::level_enum g_level = spdlog::level::warn;

spdlog::sink_ptr SharedSink() {
  static spdlog::sink_ptr sink = [] {
    auto s = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    s->set_pattern("nativeprof: %^%l%$: [%n] %v");
    return s;
  }();
  return sink;
}

}  // namespace

void InitLogging(int verbosity) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_level = verbosity <= 0   ? spdlog::level::warn
            : verbosity == 1 ? spdlog::level::info
            : verbosity == 2 ? spdlog::level::debug
                             : spdlog::level::trace;
  spdlog::set_level(g_level);
  spdlog::apply_all([](std::shared_ptr<spdlog::logger> l) { l->set_level(g_level); });
  spdlog::cfg::load_env_levels();
}

std::shared_ptr<spdlog::logger> Logger(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = std::make_shared<spdlog::logger>(name, SharedSink());
  logger->set_level(g_level);
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace nativeprof
