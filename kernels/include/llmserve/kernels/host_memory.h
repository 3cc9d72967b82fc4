// Host buffers for weights, the KV cache and activations: zeroed, 64-byte aligned. Large ones
// (>= 1 MiB) are anonymous mappings marked MADV_DONTFORK, so a forked child process (the grammar
// compile runs in one) copies no page tables for them and fork stays cheap whatever the model
// size; such a child must never read them.
#pragma once

#include <cstddef>

namespace llmserve::kernels {

// nullptr when the memory cannot be had. Free with host_free.
void* host_alloc(size_t bytes);
void host_free(void* p);

}  // namespace llmserve::kernels
