#include "engine/core/process_memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>

namespace llmserve {

ProcessMemory process_memory() {
  ProcessMemory m;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      unsigned long long kib = 0;
      if (std::sscanf(line, "VmRSS: %llu kB", &kib) == 1) m.rss_bytes = kib << 10;
      if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1) m.peak_bytes = kib << 10;
      if (std::sscanf(line, "RssFile: %llu kB", &kib) == 1) m.file_bytes = kib << 10;
    }
    std::fclose(f);
  }
  if (m.peak_bytes == 0) {
    struct rusage ru {};
    if (getrusage(RUSAGE_SELF, &ru) == 0) m.peak_bytes = static_cast<uint64_t>(ru.ru_maxrss) << 10;
  }
  return m;
}

std::string mib_string(uint64_t bytes) {
  return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

}  // namespace llmserve
