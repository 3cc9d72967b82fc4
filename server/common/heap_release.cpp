#include "server/common/heap_release.h"

#include <malloc.h>

#include <atomic>

namespace llmserve {

namespace {

std::atomic<int> g_large_in_flight{0};

}  // namespace

void configure_heap_for_serving() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kOwnMappingBytes));
#endif
}

LargeRequestScope::LargeRequestScope(size_t bytes) : large_(bytes >= kLargeRequestBytes) {
  if (large_) g_large_in_flight.fetch_add(1);
}

LargeRequestScope::~LargeRequestScope() {
  if (!large_) return;
  // The last of a burst: the others' memory is free by now too. A request that starts meanwhile
  // only delays the trim to its own end.
  if (g_large_in_flight.fetch_sub(1) == 1) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  }
}

}  // namespace llmserve
