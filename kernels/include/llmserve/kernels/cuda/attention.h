// What the CUDA attention kernels (decode_attention.h, prefill_attention.h) share: the head
// dims they are compiled for. Both read the paged KV cache of paged_kv.h (bf16, int8 or e4m3
// with per-row scales), take q as f32 rows with a row stride (q may sit inside a fused QKV buffer)
// and write out as bf16 rows with a row stride (the next GEMM's input format, CudaOps keeps the f32
// row pitch).
#pragma once

namespace llmserve::kernels::cuda {

// head_dim 64 or 128.
bool attention_supports_head_dim(int head_dim);

}  // namespace llmserve::kernels::cuda
