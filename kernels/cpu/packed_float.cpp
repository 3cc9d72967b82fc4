// F16 / BF16 packed weights (packed_float.h): the panel layout, and the matmul over it that tiles
// the activations and splits the work over the pool.
#include "kernels/cpu/packed_float.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "llmserve/kernels/cpu_isa.h"

namespace llmserve::kernels::cpu {
namespace {

constexpr int64_t kPanel = kFloatPanelRows;
constexpr size_t kMaxWeights = 8;
constexpr int64_t kTileCalls = 6;  // activation-row calls per tile when M is large

int64_t panels_of(int64_t N) {
  return (N + kPanel - 1) / kPanel;
}

size_t fp8_weight_bytes(int64_t K) {
  return static_cast<size_t>((K * kPanel + 63) / 64 * 64);
}

size_t panel_bytes(DType type, int64_t K, int64_t group) {
  if (type == DType::F8_E4M3) {
    const int64_t groups = (K + group - 1) / group;
    return fp8_weight_bytes(K) + static_cast<size_t>(groups) * kPanel * sizeof(float);
  }
  return type == DType::BF16 ? static_cast<size_t>((K + 1) / 2) * 4 * kPanel
                             : static_cast<size_t>(K) * 2 * kPanel;
}

// 2^120: the kernels' e4m3 -> f32 widening leaves the value times 2^-120.
constexpr float kFp8ScaleBias = 0x1p120f;

// One FP8 panel: the bytes column by column, then each group's 32 scales times 2^120.
void pack_fp8_panel(const uint8_t* w, const Fp8Scales& s, int64_t N, int64_t K, int64_t p,
                    uint8_t* d) {
  const int64_t group = s.block_cols, groups = (K + group - 1) / group;
  for (int64_t k0 = 0; k0 < K; k0 += 64) {
    const int64_t k1 = std::min(K, k0 + 64);
    for (int64_t j = 0; j < kPanel; ++j) {
      const int64_t n = p * kPanel + j;
      for (int64_t k = k0; k < k1; ++k) d[k * kPanel + j] = n < N ? w[n * K + k] : 0;
    }
  }
  std::memset(d + K * kPanel, 0, fp8_weight_bytes(K) - static_cast<size_t>(K * kPanel));
  auto* sc = reinterpret_cast<float*>(d + fp8_weight_bytes(K));
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t j = 0; j < kPanel; ++j) {
      const int64_t n = p * kPanel + j;
      sc[g * kPanel + j] = n < N ? s.at(n, g * group, K) * kFp8ScaleBias : 0.0f;
    }
  }
}

// Writes one panel: element (k, j) of its rows (rows[j]; nullptr: a padding row) at d[at(k, j)],
// zeros for k >= K up to k_end. Blocks of 64 columns keep the written lines in L1 over the 32 rows.
template <typename At>
void pack_panel(const uint16_t* const* rows, int64_t K, int64_t k_end, uint16_t* d, At at) {
  for (int64_t k0 = 0; k0 < k_end; k0 += 64) {
    const int64_t k1 = std::min(k_end, k0 + 64), kv = std::min(K, k1);
    for (int64_t j = 0; j < kPanel; ++j) {
      const uint16_t* s = rows[j];
      int64_t k = k0;
      if (s != nullptr) {
        for (; k < kv; ++k) d[at(k, j)] = s[k];
      }
      for (; k < k1; ++k) d[at(k, j)] = 0;
    }
  }
}

void pack_panels(DType type, const uint16_t* src, int64_t N, int64_t K, uint16_t* dst, int64_t p0,
                 int64_t p1) {
  const int64_t pairs = (K + 1) / 2;
  for (int64_t p = p0; p < p1; ++p) {
    const uint16_t* rows[kPanel];
    for (int64_t j = 0; j < kPanel; ++j) {
      const int64_t n = p * kPanel + j;
      rows[j] = n < N ? src + n * K : nullptr;
    }
    if (type == DType::BF16) {
      pack_panel(rows, K, 2 * pairs, dst + p * pairs * 2 * kPanel,
                 [](int64_t k, int64_t j) { return k / 2 * 2 * kPanel + 2 * j + k % 2; });
    } else {
      pack_panel(rows, K, K, dst + p * K * kPanel,
                 [](int64_t k, int64_t j) { return k * kPanel + j; });
    }
  }
}

bool has_avx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

struct Chunk {
  int64_t m;  // first activation row
  int rows;
};

}  // namespace

// AVX-512 unless forced to AVX2: with VNNI the quantized kernels' choice (set_packed_isa) rules;
// without it (AVX-512F CPUs before VNNI) the process-wide one (set_cpu_isa) does.
const FloatKernels& active_float_kernels() {
  static const FloatKernels avx2 = float_kernels_avx2();
  static const FloatKernels avx512 = has_avx512f() ? float_kernels_avx512() : avx2;
  const bool wide = cpu_has_avx512_vnni() ? active_packed_isa() != PackedIsa::kAvx2
                                          : has_avx512f() && active_cpu_isa() == CpuIsa::kAvx512;
  return wide ? avx512 : avx2;
}

size_t packed_f32_floats(int64_t N, int64_t K) {
  return static_cast<size_t>(panels_of(N) * K * kPanel);
}

void pack_f32_rows(const float* src, int64_t ld, int64_t N, int64_t K, float* out, int64_t p0,
                   int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    float* d = out + p * K * kPanel;
    for (int64_t j = 0; j < kPanel; ++j) {
      const int64_t n = p * kPanel + j;
      if (n < N) {
        const float* s = src + n * ld;
        for (int64_t k = 0; k < K; ++k) d[k * kPanel + j] = s[k];
      } else {
        for (int64_t k = 0; k < K; ++k) d[k * kPanel + j] = 0.0f;
      }
    }
  }
}

void pack_f32_columns(const float* src, int64_t ld, int64_t N, int64_t K, float* out, int64_t p0,
                      int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    float* d = out + p * K * kPanel;
    const int64_t n0 = p * kPanel, valid = std::min(kPanel, N - n0);
    for (int64_t k = 0; k < K; ++k) {
      std::copy_n(src + k * ld + n0, valid, d + k * kPanel);
      std::fill(d + k * kPanel + valid, d + (k + 1) * kPanel, 0.0f);
    }
  }
}

bool is_float_pack_type(DType type) {
  return type == DType::F16 || type == DType::BF16 || type == DType::F8_E4M3;
}

bool can_pack_float(DType type, int64_t N, int64_t K) {
  return (type == DType::F16 || type == DType::BF16) && N > 0 && K > 0;
}

size_t packed_float_bytes(DType type, int64_t N, int64_t K, int64_t group) {
  return static_cast<size_t>(panels_of(N)) * panel_bytes(type, K, group);
}

bool fp8_scales_packable(const Fp8Scales& scales, int64_t N, int64_t K) {
  const size_t n = scales.count(N, K);
  for (size_t i = 0; i < n; ++i) {
    if (!(scales.data[i] >= 0.0f && scales.data[i] < 256.0f)) return false;
  }
  return true;
}

void pack_fp8(const uint8_t* w, const Fp8Scales& scales, int64_t N, int64_t K, void* out,
              ThreadPool* pool) {
  const size_t pb = panel_bytes(DType::F8_E4M3, K, scales.block_cols);
  auto* dst = static_cast<uint8_t*>(out);
  auto pack = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) pack_fp8_panel(w, scales, N, K, p, dst + p * pb);
  };
  if (pool != nullptr) {
    pool->parallel_for(panels_of(N), pack);
  } else {
    pack(0, panels_of(N));
  }
}

void pack_float(DType type, const void* w, int64_t N, int64_t K, void* out, ThreadPool* pool) {
  const auto* src = static_cast<const uint16_t*>(w);
  auto* dst = static_cast<uint16_t*>(out);
  auto pack = [&](int64_t p0, int64_t p1) { pack_panels(type, src, N, K, dst, p0, p1); };
  if (pool != nullptr) {
    pool->parallel_for(panels_of(N), pack);
  } else {
    pack(0, panels_of(N));
  }
}

void matmul_packed_float_multi(ThreadPool& pool, const float* x, int64_t M,
                               std::span<const PackedWeight* const> ws, std::span<float* const> ys,
                               ActPrecision /*precision*/) {
  const size_t nw = std::min({ws.size(), ys.size(), kMaxWeights});
  if (M <= 0 || nw == 0) return;
  const int64_t K = ws[0]->cols();
  const FloatKernels& ks = active_float_kernels();
  const int64_t cap = ks.max_rows;

  // Tiles of activation rows (one per task), each in calls of near-equal size <= cap.
  const int64_t tile_m = M <= 2 * kTileCalls * cap ? M : kTileCalls * cap;
  const int64_t m_tiles = (M + tile_m - 1) / tile_m;
  // (Thread-locals: the pool's lambdas below reach them only through these plain pointers.)
  thread_local std::vector<Chunk> chunk_buf;
  thread_local std::vector<int64_t> tile_buf;  // first chunk of each tile, then the count
  std::vector<Chunk>& chunk_list = chunk_buf;
  std::vector<int64_t>& tile_list = tile_buf;
  chunk_list.clear();
  tile_list.clear();
  for (int64_t m0 = 0; m0 < M; m0 += tile_m) {
    const int64_t rows = std::min(tile_m, M - m0), calls = (rows + cap - 1) / cap;
    tile_list.push_back(static_cast<int64_t>(chunk_list.size()));
    for (int64_t c = 0, m = m0; c < calls; ++c) {
      const int r = static_cast<int>(rows / calls + (c < rows % calls));
      chunk_list.push_back({m, r});
      m += r;
    }
  }
  tile_list.push_back(static_cast<int64_t>(chunk_list.size()));
  const Chunk* chunks = chunk_list.data();
  const int64_t* tile_first = tile_list.data();

  // Each call's rows interleaved (x[k * R + r]) at the place of its first row; one row as is.
  const float* xt = x;
  thread_local std::vector<float> scratch;
  if (M > 1) {
    if (scratch.size() < static_cast<size_t>(M * K)) scratch.resize(static_cast<size_t>(M * K));
    float* xi = scratch.data();
    auto interleave = [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const Chunk ch = chunks[c];
        float* d = xi + ch.m * K;
        for (int r = 0; r < ch.rows; ++r) {
          const float* s = x + (ch.m + r) * K;
          for (int64_t k = 0; k < K; ++k) d[k * ch.rows + r] = s[k];
        }
      }
    };
    const auto n_chunks = static_cast<int64_t>(chunk_list.size());
    if (M >= 8) {
      pool.parallel_for(n_chunks, interleave);
    } else {
      interleave(0, n_chunks);
    }
    xt = xi;
  }

  // Panels per task: decode streams several at once; prefill reuses one over its tile's calls.
  const int64_t per_task = M <= 2 ? 4 : M <= cap ? 2 : 1;
  struct Job {
    FloatTileFn fn;
    const uint8_t* w;
    size_t panel_bytes;
    int64_t N, panels, first_task, group;
    float* y;
  };
  Job jobs[kMaxWeights];
  int64_t tasks = 0;
  for (size_t i = 0; i < nw; ++i) {
    const PackedWeight& w = *ws[i];
    Job& j = jobs[i];
    j.fn = w.type() == DType::BF16 ? ks.bf16 : w.type() == DType::F8_E4M3 ? ks.fp8 : ks.f16;
    j.w = static_cast<const uint8_t*>(w.data());
    j.group = w.group();
    j.panel_bytes = panel_bytes(w.type(), K, w.group());
    j.N = w.rows();
    j.panels = panels_of(j.N);
    j.first_task = tasks;
    j.y = ys[i];
    tasks += (j.panels + per_task - 1) / per_task * m_tiles;
  }
  const bool prefetch = M <= 2;
  pool.parallel_for(tasks, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      size_t i = nw - 1;
      while (jobs[i].first_task > t) --i;
      const Job& j = jobs[i];
      const int64_t lt = t - j.first_task, tile = lt % m_tiles;
      const int64_t p0 = lt / m_tiles * per_task, np = std::min(per_task, j.panels - p0);
      const int64_t n0 = p0 * kPanel, valid = std::min(np * kPanel, j.N - n0);
      const uint8_t* w = j.w + static_cast<size_t>(p0) * j.panel_bytes;
      for (int64_t c = tile_first[tile]; c < tile_first[tile + 1]; ++c) {
        const Chunk ch = chunks[c];
        j.fn(w, static_cast<int64_t>(j.panel_bytes), np, K, j.group, xt + ch.m * K, ch.rows,
             j.y + ch.m * j.N + n0, j.N, valid, prefetch);
      }
    }
  });
}

}  // namespace llmserve::kernels::cpu
