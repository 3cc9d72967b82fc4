#include "server/cli/log_to_stderr.h"

#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace llmserve::cli {

void log_to_stderr() {
  static const auto logger = [] {
    auto l = std::make_shared<spdlog::logger>(
        "", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_level(spdlog::default_logger()->level());
    return l;
  }();
  spdlog::set_default_logger(logger);
}

}  // namespace llmserve::cli
