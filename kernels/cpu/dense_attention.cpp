// Bidirectional attention of one long sequence (encoder.h): per head, the keys packed as F32
// panels of 32 keys (K = head_dim) and the values as panels of 32 head lanes (K = n); per group of
// queries (a few calls of the panel kernel's R rows), scores = q . K^T panel by panel, softmax per
// row in place, then out = p . V over chunks of keys, each value chunk shared by the group's calls.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/attention_core.h"
#include "kernels/cpu/packed_float.h"
#include "llmserve/kernels/encoder.h"

namespace llmserve::kernels {

void dense_attention(ThreadPool& pool, const float* q, const float* k, const float* v, int64_t n,
                     int num_heads, int head_dim, float scale, float* out) {
  if (n <= 0 || num_heads <= 0 || head_dim <= 0) return;
  const cpu::FloatKernels& ks = cpu::active_float_kernels();
  constexpr int64_t P = cpu::kFloatPanelRows;
  // Calls of R rows per query group (about 16 rows or more: each key panel is read from L1 and
  // each value chunk from L2 once per group, not once per call); keys in chunks for p.v.
  const int R = ks.max_rows, calls = std::max(1, (16 + R - 1) / R);
  const int64_t group_rows = int64_t{calls} * R;
  constexpr int64_t kKeyChunk = 512;
  const int64_t width = int64_t{num_heads} * head_dim, hd = head_dim;
  const int64_t key_panels = (n + P - 1) / P, value_panels = (hd + P - 1) / P;
  const int64_t key_panel_bytes = hd * P * 4, value_panel_bytes = n * P * 4;
  // The calling thread's panels, kept between calls (a tower's first image sizes them for the
  // rest); the pool's lambdas reach them through these references, not as their own thread_locals.
  thread_local std::vector<float> kp_buf, vp_buf;
  std::vector<float>& kp = kp_buf;
  std::vector<float>& vp = vp_buf;
  kp.resize(cpu::packed_f32_floats(n, hd));
  vp.resize(cpu::packed_f32_floats(hd, n));
  const auto* kpb = reinterpret_cast<const uint8_t*>(kp.data());
  const auto* vpb = reinterpret_cast<const uint8_t*>(vp.data());
  const int64_t groups = (n + group_rows - 1) / group_rows;
  // Score rows whole vectors long and vector-aligned: softmax_lanes reads them so.
  const int64_t lds = (n + 7) / 8 * 8;
  for (int h = 0; h < num_heads; ++h) {
    const int64_t col = int64_t{h} * hd;
    pool.parallel_for(key_panels + value_panels, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (t < key_panels) {
          cpu::pack_f32_rows(k + col, width, n, hd, kp.data(), t, t + 1);
        } else {
          const int64_t p = t - key_panels;
          cpu::pack_f32_columns(v + col, width, hd, n, vp.data(), p, p + 1);
        }
      }
    });
    pool.parallel_for(groups, [&](int64_t begin, int64_t end) {
      thread_local std::vector<float> xq, s_buf, sums;
      xq.resize(static_cast<size_t>(group_rows * hd));
      s_buf.resize(static_cast<size_t>(group_rows * lds + 8));
      sums.resize(static_cast<size_t>(group_rows));
      float* s = s_buf.data() + (8 - reinterpret_cast<uintptr_t>(s_buf.data()) / 4 % 8) % 8;
      for (int64_t g = begin; g < end; ++g) {
        const int64_t i0 = g * group_rows, rows = std::min(group_rows, n - i0);
        const int n_calls = static_cast<int>((rows + R - 1) / R);
        auto call_rows = [&](int c) {
          return static_cast<int>(std::min<int64_t>(R, rows - c * R));
        };
        for (int c = 0; c < n_calls; ++c) {  // each call's queries interleaved, scaled
          const int rc = call_rows(c);
          float* xc = xq.data() + int64_t{c} * R * hd;
          for (int r = 0; r < rc; ++r) {
            const float* qi = q + (i0 + int64_t{c} * R + r) * width + col;
            for (int64_t d = 0; d < hd; ++d) xc[d * rc + r] = qi[d] * scale;
          }
        }
        for (int64_t p = 0; p < key_panels; ++p) {
          const int64_t valid = std::min(P, n - p * P);
          for (int c = 0; c < n_calls; ++c) {
            ks.f32(kpb + p * key_panel_bytes, key_panel_bytes, 1, hd, 0,
                   xq.data() + int64_t{c} * R * hd, call_rows(c), s + int64_t{c} * R * lds + p * P,
                   lds, valid, false);
          }
        }
        for (int64_t r = 0; r < rows; ++r) {  // e^(s - max) in place, the row's sum kept
          float mx = -INFINITY, sum = 0.0f;
          cpu::softmax_lanes<cpu::Avx2Floats>(s + r * lds, static_cast<int>(n), &mx, &sum);
          sums[static_cast<size_t>(r)] = sum;
        }
        float* o = out + i0 * width + col;
        for (int64_t k0 = 0; k0 < n; k0 += kKeyChunk) {
          const int64_t kc = std::min(kKeyChunk, n - k0);
          for (int64_t p = 0; p < value_panels; ++p) {
            const uint8_t* chunk = vpb + p * value_panel_bytes + k0 * P * 4;
            const int64_t valid = std::min(P, hd - p * P);
            for (int c = 0; c < n_calls; ++c) {
              ks.f32_row_major(chunk, value_panel_bytes, 1, kc, s + int64_t{c} * R * lds + k0, lds,
                               call_rows(c), o + int64_t{c} * R * width + p * P, width, valid,
                               k0 > 0);
            }
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          const float inv = 1.0f / sums[r];
          for (int64_t d = 0; d < hd; ++d) o[r * width + d] *= inv;
        }
      }
    });
  }
}

}  // namespace llmserve::kernels
