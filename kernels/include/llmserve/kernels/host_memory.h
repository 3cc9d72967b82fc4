// Host buffers for weights, the KV cache and activations: zeroed, 64-byte aligned. Large ones
// (>= 1 MiB) are anonymous mappings marked MADV_DONTFORK, so a forked child process (the grammar
// compile runs in one) copies no page tables for them and fork stays cheap whatever the model
// size; such a child must never read them. Those of at least 2 MiB start on a 2 MiB boundary and
// are marked MADV_HUGEPAGE (transparent huge pages: streamed weights and KV cost fewer TLB misses);
// LLMSERVE_NO_HUGE_PAGES=1 leaves them on 4 KiB pages, for comparisons.
#pragma once

#include <cstddef>

namespace llmserve::kernels {

// nullptr when the memory cannot be had. Free with host_free.
void* host_alloc(size_t bytes);
void host_free(void* p);

}  // namespace llmserve::kernels
