// matmul_packed_grouped (the mixture-of-experts matmul: each segment's weights over its own rows of
// one x, in one parallel_for) gives, bit for bit, what matmul_packed gives per segment and weight:
// every packable type, both activation precisions, every instruction set, segments of 0, 1, a few
// and over 128 rows (the wide kernels' tiles), and layouts mixed across segments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "llmserve/kernels/packed_weight.h"
#include "packed_isa_guard.h"

namespace llmserve::kernels {
namespace {

using testing::IsaGuard;
using testing::random_floats;
using testing::random_weights;

struct Expert {
  std::vector<std::vector<uint8_t>> raw;
  std::vector<PackedWeight> packed;
};

// Experts of two weights each (gate and up: N0, N1 rows) over x rows [begin, end) per expert.
void expect_grouped_equals_separate(const std::vector<std::pair<DType, DType>>& types,
                                    const std::vector<int64_t>& counts, int64_t K, ActPrecision p,
                                    ThreadPool& pool, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t N0 = 40, N1 = 24;
  int64_t M = 0;
  for (int64_t c : counts) M += c;
  const auto x = random_floats(rng, M * K);
  std::vector<Expert> experts(types.size());
  std::vector<std::vector<float>> grouped, separate;
  std::vector<std::vector<const PackedWeight*>> ws(types.size());
  std::vector<std::vector<float*>> ys(types.size());
  std::vector<PackedSegment> segments;
  int64_t begin = 0;
  for (size_t e = 0; e < types.size(); ++e) {
    const std::pair<DType, int64_t> shapes[] = {{types[e].first, N0}, {types[e].second, N1}};
    for (auto [t, n] : shapes) {
      experts[e].raw.push_back(random_weights(rng, t, n, K));
      experts[e].packed.push_back(pack_weight(t, experts[e].raw.back().data(), n, K));
      ASSERT_FALSE(experts[e].packed.back().empty()) << dtype_name(t);
    }
  }
  for (size_t e = 0; e < types.size(); ++e) {
    for (const PackedWeight& w : experts[e].packed) {
      ws[e].push_back(&w);
      grouped.emplace_back(counts[e] * w.rows(), NAN);
      ys[e].push_back(grouped.back().data());
    }
    segments.push_back({begin, begin + counts[e], ws[e], ys[e]});
    begin += counts[e];
  }
  matmul_packed_grouped(pool, x.data(), segments, p);
  size_t out = 0;
  for (size_t e = 0; e < types.size(); ++e) {
    for (const PackedWeight& w : experts[e].packed) {
      const std::vector<float>& got = grouped[out++];
      if (counts[e] == 0) continue;
      std::vector<float> want(counts[e] * w.rows(), NAN);
      matmul_packed(pool, x.data() + segments[e].begin * K, counts[e], w, want.data(), p);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
          << dtype_name(w.type()) << " expert " << e << " of " << counts[e] << " rows, "
          << act_precision_name(p);
    }
  }
}

class PackedGrouped : public ::testing::TestWithParam<std::tuple<DType, ActPrecision>> {};

TEST_P(PackedGrouped, EqualsOneCallPerSegmentOnEveryIsa) {
  const auto [type, p] = GetParam();
  std::vector<PackedIsa> isas = {PackedIsa::kAvx2};
  if (cpu_has_avx512_vnni())
    isas.insert(isas.end(), {PackedIsa::kAvx512Vnni, PackedIsa::kAvx512Vnni256});
  const bool k_quant = dtype_info(type).block_elems == kQKK;
  ThreadPool pool(3);
  const std::vector<int64_t> counts = {3, 0, 1, 140, 17, 2};
  const std::vector<std::pair<DType, DType>> types(counts.size(), {type, type});
  for (PackedIsa isa : isas) {
    IsaGuard guard(isa);
    for (int64_t K : k_quant ? std::vector<int64_t>{256, 768} : std::vector<int64_t>{288, 512}) {
      expect_grouped_equals_separate(types, counts, K, p, pool, 11);
    }
  }
}

#define LLMSERVE_PACKABLE_TYPES                                                              \
  DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, \
      DType::Q6_K
INSTANTIATE_TEST_SUITE_P(PackableTypes, PackedGrouped,
                         ::testing::Combine(::testing::Values(LLMSERVE_PACKABLE_TYPES),
                                            ::testing::Values(ActPrecision::kQ8,
                                                              ActPrecision::kQ8x2)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  std::string(act_precision_name(std::get<1>(info.param)));
                         });

// A Q4_K_M file's experts: gate / up in Q4_K, some layers' in Q6_K, and F16 (panels, f32
// activations): the layouts differ within or across segments and the call splits them.
TEST(PackedGrouped, MixedLayoutsAcrossAndWithinSegments) {
  ThreadPool pool(2);
  const std::vector<std::pair<DType, DType>> types = {{DType::Q4_K, DType::Q4_K},
                                                      {DType::Q6_K, DType::Q6_K},
                                                      {DType::Q4_K, DType::Q6_K},
                                                      {DType::F16, DType::Q8_0}};
  for (ActPrecision p : {ActPrecision::kQ8, ActPrecision::kQ8x2}) {
    expect_grouped_equals_separate(types, {5, 1, 20, 9}, 512, p, pool, 3);
  }
}

}  // namespace
}  // namespace llmserve::kernels
