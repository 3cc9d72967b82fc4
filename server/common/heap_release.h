// Hands freed heap back to the OS after large requests. glibc keeps what its arenas freed for
// later reuse, and by default raises its mmap threshold to the largest block freed (up to
// 32 MiB): after the first 8 MiB body, body buffers came from the arenas, and a thread arena's
// free top is never returned (malloc_trim returns only free pages inside an arena, and the main
// arena's top). Measured: +100 to +120 MiB of RSS kept after each burst of 8 refused 8 MiB
// bodies, growing burst after burst.
// - configure_heap_for_serving (start-up): blocks of 1 MiB or more are their own mappings, given
//   back when freed (the threshold no longer moves). A decode step allocates none (strace: the
//   same mmap/munmap count with and without it).
// - LargeRequestScope: the last large request of a burst to finish calls malloc_trim(0), which
//   returns the free pages a large request's parsed tree left inside the arenas; small requests
//   never pay for it.
#pragma once

#include <cstddef>

namespace llmserve {

// Requests at least this large (body or message bytes) trim when they end.
inline constexpr size_t kLargeRequestBytes = 1u << 20;
// Heap blocks at least this large get a mapping of their own.
inline constexpr size_t kOwnMappingBytes = 1u << 20;

// mallopt(M_MMAP_THRESHOLD, kOwnMappingBytes); once, before the servers start.
void configure_heap_for_serving();

// Held for the life of one request; `bytes`: its body or message size.
class LargeRequestScope {
 public:
  explicit LargeRequestScope(size_t bytes);
  ~LargeRequestScope();
  LargeRequestScope(const LargeRequestScope&) = delete;
  LargeRequestScope& operator=(const LargeRequestScope&) = delete;

 private:
  bool large_;
};

}  // namespace llmserve
