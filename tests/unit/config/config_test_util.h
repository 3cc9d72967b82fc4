// Helpers shared by the config tests: temporary files and error-message matching.
#pragma once

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace llmserve::testing_util {

// Writes `text` to a fresh file under the test temp dir and returns its path.
inline std::string write_temp_file(const std::string& name, const std::string& text) {
  static int counter = 0;
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      ("llmserve_config_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace llmserve::testing_util
