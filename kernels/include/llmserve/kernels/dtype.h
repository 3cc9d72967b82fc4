// Element types of weights and activations. Values equal GGML's type ids so GGUF tensor infos
// map directly. Quantized types store rows as consecutive blocks of `block_elems` elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace llmserve::kernels {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  // FP8 e4m3 ("e4m3fn": no infinities, max 448), one byte per element. Not a GGML type (the id is
  // outside GGML's range and a GGUF naming it is refused): HF FP8 checkpoints' weights, which
  // always come with their scales (kernels/fp8.h).
  F8_E4M3 = 200,
};

struct DTypeInfo {
  DType type;
  std::string_view name;
  uint32_t block_elems;  // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
};

// nullopt for ids this build does not know (e.g. IQ types): callers report the tensor and id.
constexpr std::optional<DTypeInfo> dtype_info(uint32_t id) {
  switch (static_cast<DType>(id)) {
    case DType::F32:
      return DTypeInfo{DType::F32, "F32", 1, 4};
    case DType::F16:
      return DTypeInfo{DType::F16, "F16", 1, 2};
    case DType::BF16:
      return DTypeInfo{DType::BF16, "BF16", 1, 2};
    case DType::F8_E4M3:
      return DTypeInfo{DType::F8_E4M3, "F8_E4M3", 1, 1};
    case DType::F64:
      return DTypeInfo{DType::F64, "F64", 1, 8};
    case DType::I8:
      return DTypeInfo{DType::I8, "I8", 1, 1};
    case DType::I16:
      return DTypeInfo{DType::I16, "I16", 1, 2};
    case DType::I32:
      return DTypeInfo{DType::I32, "I32", 1, 4};
    case DType::I64:
      return DTypeInfo{DType::I64, "I64", 1, 8};
    case DType::Q4_0:
      return DTypeInfo{DType::Q4_0, "Q4_0", 32, 18};
    case DType::Q4_1:
      return DTypeInfo{DType::Q4_1, "Q4_1", 32, 20};
    case DType::Q5_0:
      return DTypeInfo{DType::Q5_0, "Q5_0", 32, 22};
    case DType::Q5_1:
      return DTypeInfo{DType::Q5_1, "Q5_1", 32, 24};
    case DType::Q8_0:
      return DTypeInfo{DType::Q8_0, "Q8_0", 32, 34};
    case DType::Q8_1:
      return DTypeInfo{DType::Q8_1, "Q8_1", 32, 36};
    case DType::Q2_K:
      return DTypeInfo{DType::Q2_K, "Q2_K", 256, 84};
    case DType::Q3_K:
      return DTypeInfo{DType::Q3_K, "Q3_K", 256, 110};
    case DType::Q4_K:
      return DTypeInfo{DType::Q4_K, "Q4_K", 256, 144};
    case DType::Q5_K:
      return DTypeInfo{DType::Q5_K, "Q5_K", 256, 176};
    case DType::Q6_K:
      return DTypeInfo{DType::Q6_K, "Q6_K", 256, 210};
    case DType::Q8_K:
      return DTypeInfo{DType::Q8_K, "Q8_K", 256, 292};
  }
  return std::nullopt;
}

constexpr DTypeInfo dtype_info(DType t) {
  return *dtype_info(static_cast<uint32_t>(t));
}
constexpr std::string_view dtype_name(DType t) {
  return dtype_info(t).name;
}

// Stored in blocks with scales (Q4_0 ... Q8_K), not element by element (floats, integers).
constexpr bool dtype_is_quantized(DType t) {
  return dtype_info(t).block_elems > 1;
}
// The K-quants: super-blocks of 256 elements with sub-block scales (Q2_K ... Q6_K, Q8_K).
constexpr bool dtype_is_k_quant(DType t) {
  return dtype_info(t).block_elems == 256;
}

// Bytes of one row of n elements; precondition: n % block_elems == 0.
constexpr size_t row_bytes(DType t, int64_t n) {
  const auto info = dtype_info(t);
  return static_cast<size_t>(n / info.block_elems) * info.block_bytes;
}

}  // namespace llmserve::kernels
