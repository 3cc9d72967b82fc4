// This process's resident memory, for start-up logs and memory tests (Linux /proc/self/status).
#pragma once

#include <cstdint>
#include <string>

namespace llmserve {

struct ProcessMemory {
  uint64_t rss_bytes = 0;   // VmRSS: resident now (anonymous + file-backed pages)
  uint64_t peak_bytes = 0;  // VmHWM: the most resident so far (getrusage ru_maxrss without /proc)
  uint64_t file_bytes = 0;  // RssFile: resident pages of file mappings (a model's mmap)
};

ProcessMemory process_memory();

// "1234 MiB".
std::string mib_string(uint64_t bytes);

}  // namespace llmserve
