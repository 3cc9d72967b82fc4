#include "engine/model/quantize_model.h"

#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/model/mapped_file.h"
#include "llmserve/kernels/dequantize.h"
#include "llmserve/kernels/fp8.h"
#include "llmserve/kernels/host_memory.h"
#include "llmserve/kernels/quantize_weights.h"

namespace llmserve {
namespace {

using kernels::DType;

bool is_float_type(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

constexpr int64_t kFp8Block = 128;  // Qwen3-FP8's and DeepSeek-V3's weight_block_size

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1u << 20);
}

// One matrix to e4m3 with 128 x 128 block scales (kernels::quantize_fp8_matrix); returns the
// bytes of the copy and its scales.
Result<uint64_t> quantize_fp8(LoadedModel& model, const TensorView& t, kernels::ThreadPool& pool) {
  const kernels::Fp8Scales grid{nullptr, kFp8Block, kFp8Block};
  const size_t bytes = static_cast<size_t>(t.rows() * t.cols());
  const size_t scale_bytes = grid.count(t.rows(), t.cols()) * sizeof(float);
  void* q = kernels::host_alloc(bytes);
  auto* scales = static_cast<float*>(kernels::host_alloc(scale_bytes));
  if (q == nullptr || scales == nullptr) {
    kernels::host_free(q);
    kernels::host_free(scales);
    return resource_exhausted("model.quantize: cannot allocate " +
                              std::to_string(bytes + scale_bytes) + " bytes for " + t.name);
  }
  kernels::quantize_fp8_matrix(pool, t.type, t.data, t.rows(), t.cols(), kFp8Block, kFp8Block,
                               static_cast<uint8_t*>(q), scales);
  LLMSERVE_RETURN_IF_ERROR(
      model.replace_tensor_fp8(t.name, q, bytes, scales, kFp8Block, kFp8Block));
  return static_cast<uint64_t>(bytes + scale_bytes);
}

}  // namespace

Result<std::optional<DType>> parse_model_quantize(std::string_view name) {
  if (name.empty()) return std::optional<DType>();
  if (name == "q8_0") return std::optional<DType>(DType::Q8_0);
  if (name == "q4_0") return std::optional<DType>(DType::Q4_0);
  if (name == "q4_k") return std::optional<DType>(DType::Q4_K);
  if (name == "fp8") return std::optional<DType>(DType::F8_E4M3);
  return invalid_argument("model.quantize must be \"\" (off), q8_0, q4_0, q4_k or fp8, got '" +
                          std::string(name) + "'");
}

std::optional<DType> quantize_target_for(std::string_view name, DType target) {
  if (name == "output.weight") {
    // fp8 leaves the LM head as stored, as the published FP8 checkpoints do.
    if (target == DType::F8_E4M3) return std::nullopt;
    return target == DType::Q8_0 ? target : DType::Q8_0;
  }
  if (!name.starts_with("blk.")) return std::nullopt;
  for (std::string_view s :
       {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_output.weight",
        ".ffn_gate.weight", ".ffn_up.weight", ".ffn_down.weight"}) {
    if (ends_with(name, s)) return target;
  }
  return std::nullopt;
}

std::string QuantizeReport::summary() const {
  return fmt::format(
      "model.quantize: {} matrices quantized in {:.2f} s ({:.1f} MiB -> {:.1f} MiB; {:.1f} MiB of "
      "mapped source pages released); {} already quantized and {} with a row length not a "
      "multiple of the block left as stored",
      quantized, seconds, mib(bytes_before), mib(bytes_after), mib(released_bytes),
      already_quantized, shape_kept);
}

Result<QuantizeReport> quantize_model_weights(LoadedModel& model, DType target,
                                              kernels::ThreadPool& pool) {
  const auto t0 = std::chrono::steady_clock::now();
  QuantizeReport r;
  std::map<std::string, int64_t> kept_types;                          // stored quantized, by type
  std::map<std::string, int64_t> made_types;                          // converted, by target type
  std::map<std::string, std::pair<int64_t, std::string>> shape_kept;  // why -> (count, first)
  std::vector<TensorView> todo;
  for (const TensorView& t : model.tensors()) {
    const std::optional<DType> to = quantize_target_for(t.name, target);
    if (!to || t.shape.size() != 2) continue;
    if (!is_float_type(t.type)) {
      ++r.already_quantized;
      ++kept_types[std::string(kernels::dtype_name(t.type))];
      continue;
    }
    if (*to != DType::F8_E4M3 && !kernels::can_quantize_row(*to, t.cols())) {
      ++r.shape_kept;
      const std::string key =
          fmt::format("rows of {} stay {}, not a multiple of {}'s block of {}", t.cols(),
                      kernels::dtype_name(t.type), kernels::dtype_name(*to),
                      kernels::dtype_info(*to).block_elems);
      auto it = shape_kept.try_emplace(key, 0, t.name).first;
      ++it->second.first;
      continue;
    }
    todo.push_back(t);
  }
  for (const TensorView& t : todo) {
    const DType to = *quantize_target_for(t.name, target);
    if (to == DType::F8_E4M3) {
      LLMSERVE_ASSIGN_OR_RETURN(const uint64_t bytes, quantize_fp8(model, t, pool));
      r.released_bytes += release_mapped_pages(t.data, t.nbytes);
      ++r.quantized;
      ++made_types[std::string(kernels::dtype_name(to))];
      r.bytes_before += t.nbytes;
      r.bytes_after += bytes;
      continue;
    }
    const size_t bytes = kernels::row_bytes(to, t.cols()) * static_cast<size_t>(t.rows());
    void* dst = kernels::host_alloc(bytes);
    if (dst == nullptr) {
      return resource_exhausted("model.quantize: cannot allocate " + std::to_string(bytes) +
                                " bytes for " + t.name);
    }
    kernels::quantize_matrix(pool, t.type, t.data, to, dst, t.rows(), t.cols());
    LLMSERVE_RETURN_IF_ERROR(model.replace_tensor_data(t.name, to, dst, bytes));
    // Nothing reads the source again: its mapped pages leave the RSS (a no-op off a mapping).
    r.released_bytes += release_mapped_pages(t.data, t.nbytes);
    ++r.quantized;
    ++made_types[std::string(kernels::dtype_name(to))];
    r.bytes_before += t.nbytes;
    r.bytes_after += bytes;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& [why, n] : shape_kept) {
    spdlog::info("model.quantize: {} matrices with {} (e.g. {})", n.first, why, n.second);
  }
  std::string made, kept;
  for (const auto& [type, n] : made_types) made += fmt::format(" {} {}", n, type);
  for (const auto& [type, n] : kept_types) kept += fmt::format(" {} {}", n, type);
  spdlog::info("{} (to{}{}{}; {} threads)", r.summary(), made.empty() ? " nothing" : made,
               kept.empty() ? "" : "; kept", kept, pool.num_threads());
  if (r.quantized == 0 && r.already_quantized > 0) {
    spdlog::info("model.quantize: {} is already quantized; its tensors run as stored",
                 model.path());
  }
  return r;
}

}  // namespace llmserve
