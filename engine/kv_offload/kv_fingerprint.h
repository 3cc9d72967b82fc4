// What shaped a KV page, reduced to one digest: a page is restored only into a cache whose
// fingerprint equals the one it was written under. Everything that changes the bytes a forward
// pass writes into a page is in it: the weights' identity (kv_weights_identity), the backend and
// its matmul precision, the KV element type, block size, layers, KV heads, head size, the bytes
// of each cache array's block, and the RoPE settings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_cache/block_hash.h"

namespace llmserve {

struct KvFingerprintInputs {
  std::string weights_identity;  // kv_weights_identity of the model path
  std::string backend;           // cpu | cuda
  std::string compute;           // matmul precision, quantize option: anything else that counts
  std::string kv_dtype;          // f16 | f32 | int8 | fp8
  int32_t block_size = 0;
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  std::vector<uint64_t> array_block_bytes;  // per cache array (K, V, scales), in order
  std::string rope;                         // theta, scaling type and factors, pairing, as text
};

struct KvFingerprint {
  BlockHash digest;
  std::string text;  // the inputs spelled out (logged at start-up)
};

KvFingerprint kv_fingerprint(const KvFingerprintInputs& in);

// The weights' identity: for a file (or each regular file of a directory, by name), its name,
// size and an XXH3-128 of its first and last MiB and 64 evenly spaced 64 KiB windows. Cheap on
// a multi-GiB file; any re-quantization, fine-tune or different export changes it.
Result<std::string> kv_weights_identity(const std::string& model_path);

}  // namespace llmserve
