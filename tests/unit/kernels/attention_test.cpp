// write_kv, prefill and decode attention against a double-precision reference that reads K/V
// through the block tables. Outputs are convex combinations of V rows in [-1, 1], so f32 error is
// bounded by a few ulps per accumulated term: 2e-5 absolute is ample for contexts <= 400. With
// an f16 cache the reference reads the same values rounded to f16 (the compiler's _Float16
// conversion, independent of the kernels' F16C path), so the bound is the same.
#include "llmserve/kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernel_test_util.h"
#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve::kernels {
namespace {

using testing::random_floats;

float round_f16(float x) {
  return static_cast<float>(static_cast<_Float16>(x));
}

struct CacheCase {
  KvCacheShape shape;
  int num_heads;
  std::vector<int32_t> seq_lens, q_lens, block_tables;
  int64_t max_blocks;
  std::vector<float> k_cache, v_cache;
  // Full K/V per request, [len, kv_heads, head_dim], to check against.
  std::vector<std::vector<float>> k_all, v_all;

  PagedKv view() const {
    return PagedKv{shape, k_cache.data(), v_cache.data(), block_tables.data(), max_blocks};
  }
};

// Random pages for each request (shuffled block ids), all tokens written with write_kv in two
// calls (history, then the new ones), mimicking chunked prefill.
CacheCase make_setup(std::mt19937& rng, int head_dim, int kv_heads, int ratio, int block_size,
                     std::vector<int32_t> seq_lens, std::vector<int32_t> q_lens,
                     KvDtype dtype = KvDtype::kF32) {
  CacheCase s;
  s.seq_lens = std::move(seq_lens);
  s.q_lens = std::move(q_lens);
  s.num_heads = kv_heads * ratio;
  const int64_t B = s.seq_lens.size();
  s.max_blocks = 0;
  int64_t total_blocks = 0;
  for (auto L : s.seq_lens) {
    const int64_t nb = (L + block_size - 1) / block_size;
    s.max_blocks = std::max(s.max_blocks, nb);
    total_blocks += nb;
  }
  total_blocks += 3;  // unused blocks too
  s.shape = KvCacheShape{total_blocks, kv_heads, block_size, head_dim, dtype};
  std::vector<int32_t> ids(total_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  s.block_tables.assign(B * s.max_blocks, -1);
  const size_t cache = static_cast<size_t>(total_blocks) * kv_heads * block_size * head_dim;
  s.k_cache.assign(cache, NAN);  // unwritten slots must never be read
  s.v_cache.assign(cache, NAN);
  if (dtype == KvDtype::kF16) {  // f16 NaNs in the half of the storage an f16 cache uses
    for (auto* c : {&s.k_cache, &s.v_cache}) {
      auto* h = reinterpret_cast<uint16_t*>(c->data());
      std::fill(h, h + cache, uint16_t{0x7e00});
    }
  }
  int64_t next = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = s.seq_lens[b];
    const int64_t nb = (L + block_size - 1) / block_size;
    for (int64_t i = 0; i < nb; ++i) s.block_tables[b * s.max_blocks + i] = ids[next++];
    s.k_all.push_back(random_floats(rng, L * kv_heads * head_dim));
    s.v_all.push_back(random_floats(rng, L * kv_heads * head_dim));
    if (dtype == KvDtype::kF16) {
      for (auto* all : {&s.k_all.back(), &s.v_all.back()}) {
        for (float& x : *all) x = round_f16(x);
      }
    }
    std::vector<int32_t> slots(L);
    for (int64_t p = 0; p < L; ++p) {
      slots[p] = s.block_tables[b * s.max_blocks + p / block_size] * block_size + p % block_size;
    }
    const int64_t hist = L - s.q_lens[b];
    const int64_t row = static_cast<int64_t>(kv_heads) * head_dim;
    write_kv(s.shape, s.k_all[b].data(), s.v_all[b].data(), slots.data(), hist, s.k_cache.data(),
             s.v_cache.data());
    write_kv(s.shape, s.k_all[b].data() + hist * row, s.v_all[b].data() + hist * row,
             slots.data() + hist, L - hist, s.k_cache.data(), s.v_cache.data());
  }
  return s;
}

// Reference output of one query head attending positions lo..hi of request b.
void reference_range(const CacheCase& s, int64_t b, const float* q, int head, int64_t lo,
                     int64_t hi, float scale, float* out) {
  const int D = s.shape.head_dim, KVH = s.shape.num_kv_heads;
  const int kvh = head / (s.num_heads / KVH);
  std::vector<double> sc(hi + 1, 0.0);
  double mx = -1e300;
  for (int64_t j = lo; j <= hi; ++j) {
    const float* k = s.k_all[b].data() + (j * KVH + kvh) * D;
    double d = 0;
    for (int i = 0; i < D; ++i) d += static_cast<double>(q[i]) * k[i];
    sc[j] = d * scale;
    mx = std::max(mx, sc[j]);
  }
  double sum = 0;
  for (int64_t j = lo; j <= hi; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
  for (int i = 0; i < D; ++i) {
    double acc = 0;
    for (int64_t j = lo; j <= hi; ++j) acc += sc[j] * s.v_all[b][(j * KVH + kvh) * D + i];
    out[i] = static_cast<float>(acc / sum);
  }
}

// Positions 0..pos (causal).
void reference(const CacheCase& s, int64_t b, const float* q, int head, int64_t pos, float scale,
               float* out) {
  reference_range(s, b, q, head, 0, pos, scale, out);
}

TEST(KvCache, WriteKvPlacesRowsBySlot) {
  std::mt19937 rng(3);
  const KvCacheShape shape{4, 2, 3, 8};
  const auto k = random_floats(rng, 5 * 2 * 8), v = random_floats(rng, 5 * 2 * 8);
  const std::vector<int32_t> slots = {7, 0, -1, 11, 5};
  std::vector<float> kc(4 * 2 * 3 * 8, 0.0f), vc(kc.size(), 0.0f);
  write_kv(shape, k.data(), v.data(), slots.data(), 5, kc.data(), vc.data());
  int written = 0;
  for (int t = 0; t < 5; ++t) {
    if (slots[t] < 0) continue;
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 8; ++i) {
        // HND: [block][head][offset][dim]
        const size_t idx = ((slots[t] / 3 * 2 + h) * 3 + slots[t] % 3) * 8 + i;
        EXPECT_EQ(kc[idx], k[(t * 2 + h) * 8 + i]);
        EXPECT_EQ(vc[idx], v[(t * 2 + h) * 8 + i]);
        ++written;
      }
    }
  }
  EXPECT_EQ(written, 4 * 2 * 8);
  EXPECT_EQ(std::count(kc.begin(), kc.end(), 0.0f), static_cast<long>(kc.size()) - written);
}

TEST(KvCache, WriteKvF16RoundsToNearestEven) {
  std::mt19937 rng(4);
  const KvCacheShape shape{4, 2, 3, 12, KvDtype::kF16};  // head_dim 12: a vector and a tail
  auto k = random_floats(rng, 5 * 2 * 12, -70000.0f, 70000.0f);
  const auto v = random_floats(rng, 5 * 2 * 12, -1e-6f, 1e-6f);  // subnormal in f16
  k[3] = 65520.0f;                                               // rounds to infinity in f16
  const std::vector<int32_t> slots = {7, 0, -1, 11, 5};
  std::vector<uint16_t> kc(4 * 2 * 3 * 12, 0), vc(kc.size(), 0);
  write_kv(shape, k.data(), v.data(), slots.data(), 5, kc.data(), vc.data());
  for (int t = 0; t < 5; ++t) {
    if (slots[t] < 0) continue;
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 12; ++i) {
        const size_t idx = ((slots[t] / 3 * 2 + h) * 3 + slots[t] % 3) * 12 + i;
        const _Float16 want_k = static_cast<_Float16>(k[(t * 2 + h) * 12 + i]);
        const _Float16 want_v = static_cast<_Float16>(v[(t * 2 + h) * 12 + i]);
        uint16_t wk, wv;
        std::memcpy(&wk, &want_k, 2);
        std::memcpy(&wv, &want_v, 2);
        ASSERT_EQ(kc[idx], wk) << "t=" << t << " h=" << h << " i=" << i;
        ASSERT_EQ(vc[idx], wv) << "t=" << t << " h=" << h << " i=" << i;
      }
    }
  }
}

struct Grid {
  int head_dim, ratio, block_size;
  KvDtype dtype;
};

class AttentionGrid : public ::testing::TestWithParam<Grid> {};

TEST_P(AttentionGrid, PrefillAndDecodeMatchReference) {
  const auto [D, ratio, bs, dtype] = GetParam();
  const int KVH = 2;
  std::mt19937 rng(D * 100 + ratio * 10 + bs);
  // Mixed batch: full prompt, chunk after a cached prefix, single-token, long (> 1 partition).
  CacheCase s = make_setup(rng, D, KVH, ratio, bs, {17, 40, 33, 300}, {17, 9, 1, 6}, dtype);
  const int H = s.num_heads;
  const int64_t B = s.seq_lens.size();
  std::vector<int32_t> qs(B + 1, 0);
  for (int64_t b = 0; b < B; ++b) qs[b + 1] = qs[b] + s.q_lens[b];
  const int64_t T = qs[B];
  const auto q = random_floats(rng, T * H * D, -2.0f, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  ThreadPool pool(2);
  std::vector<float> out(T * H * D, NAN);
  prefill_attention(pool, s.view(), q.data(), qs.data(), s.seq_lens.data(), B, H, scale,
                    out.data());
  std::vector<float> ref(D);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < s.q_lens[b]; ++i) {
      const int64_t t = qs[b] + i, pos = s.seq_lens[b] - s.q_lens[b] + i;
      for (int h = 0; h < H; ++h) {
        reference(s, b, q.data() + (t * H + h) * D, h, pos, scale, ref.data());
        for (int d = 0; d < D; ++d) {
          ASSERT_NEAR(out[(t * H + h) * D + d], ref[d], 2e-5)
              << "b=" << b << " t=" << t << " h=" << h << " d=" << d;
        }
      }
    }
  }

  // Decode: the last query of each request, alone and batched, equals prefill bit for bit.
  std::vector<float> qd(B * H * D), dec(B * H * D, NAN);
  for (int64_t b = 0; b < B; ++b) {
    std::memcpy(qd.data() + b * H * D, q.data() + (qs[b + 1] - 1) * H * D, H * D * sizeof(float));
  }
  decode_attention(pool, s.view(), qd.data(), s.seq_lens.data(), B, H, scale, dec.data());
  for (int64_t b = 0; b < B; ++b) {
    EXPECT_EQ(0, std::memcmp(dec.data() + b * H * D, out.data() + (qs[b + 1] - 1) * H * D,
                             H * D * sizeof(float)))
        << "decode vs prefill, request " << b;
    PagedKv one = s.view();
    one.block_tables += b * s.max_blocks;
    std::vector<float> alone(H * D);
    ThreadPool pool1(1);
    decode_attention(pool1, one, qd.data() + b * H * D, s.seq_lens.data() + b, 1, H, scale,
                     alone.data());
    EXPECT_EQ(0, std::memcmp(alone.data(), dec.data() + b * H * D, H * D * sizeof(float)))
        << "decode alone vs batched, request " << b;
  }
}

std::vector<Grid> grid() {
  std::vector<Grid> g;
  for (KvDtype t : {KvDtype::kF32, KvDtype::kF16}) {
    for (int d : {64, 128}) {
      for (int r : {1, 3, 4, 8}) {
        for (int bs : {1, 16, 32}) g.push_back({d, r, bs, t});
      }
    }
  }
  g.push_back({36, 3, 16, KvDtype::kF16});  // head_dim not a multiple of 8: the scalar paths
  return g;
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionGrid, ::testing::ValuesIn(grid()), [](const auto& info) {
  return std::string(info.param.dtype == KvDtype::kF16 ? "F16" : "F32") + "_D" +
         std::to_string(info.param.head_dim) + "_G" + std::to_string(info.param.ratio) + "_BS" +
         std::to_string(info.param.block_size);
});

// A request's prefill rows do not depend on the other requests of the batch.
TEST(Attention, PrefillBatchInvariant) {
  std::mt19937 rng(9);
  CacheCase s = make_setup(rng, 64, 3, 3, 16, {50, 270, 20}, {50, 30, 5});
  const int H = s.num_heads, D = 64;
  std::vector<int32_t> qs = {0, 50, 80, 85};
  const auto q = random_floats(rng, 85 * H * D);
  ThreadPool pool(2);
  std::vector<float> all(85 * H * D), alone(30 * H * D);
  prefill_attention(pool, s.view(), q.data(), qs.data(), s.seq_lens.data(), 3, H, 0.125f,
                    all.data());
  PagedKv one = s.view();
  one.block_tables += s.max_blocks;
  const std::vector<int32_t> qs1 = {0, 30};
  prefill_attention(pool, one, q.data() + 50 * H * D, qs1.data(), s.seq_lens.data() + 1, 1, H,
                    0.125f, alone.data());
  EXPECT_EQ(0, std::memcmp(alone.data(), all.data() + 50 * H * D, alone.size() * sizeof(float)));
}

// Prefill walks the partitions a block of queries at a time; every query must still come out bit
// for bit as decode gives it alone (70 queries across partition edges after a 530-token history,
// with and without a sliding window).
TEST(Attention, EveryQueryOfALongPrefillEqualsItsDecodeAlone) {
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kF16}) {
    for (int64_t window : {0, 100}) {
      std::mt19937 rng(31);
      CacheCase s = make_setup(rng, 64, 2, 4, 16, {600, 45}, {70, 45}, dtype);
      const int H = s.num_heads, D = 64;
      PagedKv kv = s.view();
      kv.sliding_window = window;
      const std::vector<int32_t> qs = {0, 70, 115};
      const auto q = random_floats(rng, 115 * H * D, -2.0f, 2.0f);
      ThreadPool pool(2);
      std::vector<float> out(115 * H * D, NAN);
      prefill_attention(pool, kv, q.data(), qs.data(), s.seq_lens.data(), 2, H, 0.125f, out.data());
      ThreadPool pool1(1);
      std::vector<float> alone(H * D);
      for (int64_t b = 0; b < 2; ++b) {
        PagedKv one = kv;
        one.block_tables += b * s.max_blocks;
        for (int64_t i = 0; i < s.q_lens[b]; ++i) {
          const int64_t t = qs[b] + i;
          const int32_t ctx = s.seq_lens[b] - s.q_lens[b] + static_cast<int32_t>(i) + 1;
          decode_attention(pool1, one, q.data() + t * H * D, &ctx, 1, H, 0.125f, alone.data());
          ASSERT_EQ(0, std::memcmp(alone.data(), out.data() + t * H * D, H * D * sizeof(float)))
              << "dtype " << static_cast<int>(dtype) << " window " << window << " request " << b
              << " query " << i;
        }
      }
    }
  }
}

// EmbeddingGemma's local layers in bidirectional mode: a row given an attend_end past its
// position sees |position - key| < window on both sides (cut at attend_end); a causal row of the
// same batch keeps its window counted back; without symmetric_window the window is one-sided.
TEST(Attention, SymmetricWindowForRowsPastTheirPosition) {
  std::mt19937 rng(21);
  CacheCase s = make_setup(rng, 64, 2, 2, 16, {300, 40}, {300, 40});
  const int H = s.num_heads, D = 64;
  const int64_t W = 9;
  const std::vector<int32_t> qs = {0, 300, 340};
  std::vector<int32_t> end(340);
  for (int32_t t = 0; t < 300; ++t) end[t] = 300;            // request 0: bidirectional
  for (int32_t t = 300; t < 340; ++t) end[t] = t - 300 + 1;  // request 1: causal
  const auto q = random_floats(rng, 340 * H * D, -2.0f, 2.0f);
  ThreadPool pool(2);
  for (bool symmetric : {true, false}) {
    PagedKv kv = s.view();
    kv.sliding_window = W;
    kv.symmetric_window = symmetric;
    std::vector<float> out(340 * H * D, NAN), ref(D);
    prefill_attention(pool, kv, q.data(), qs.data(), s.seq_lens.data(), 2, H, 0.125f, out.data(),
                      end.data());
    for (int64_t t = 0; t < 340; ++t) {
      const int64_t b = t < 300 ? 0 : 1, pos = t - qs[b];
      const int64_t lo = std::max<int64_t>(0, pos - (W - 1));
      const int64_t hi = b == 1 ? pos : symmetric ? std::min<int64_t>(299, pos + W - 1) : 299;
      for (int h = 0; h < H; ++h) {
        reference_range(s, b, q.data() + (t * H + h) * D, h, lo, hi, 0.125f, ref.data());
        for (int d = 0; d < D; ++d) {
          ASSERT_NEAR(out[(t * H + h) * D + d], ref[d], 2e-5)
              << "symmetric=" << symmetric << " t=" << t << " h=" << h << " d=" << d;
        }
      }
    }
  }
}

}  // namespace
}  // namespace llmserve::kernels
