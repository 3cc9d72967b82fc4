// The vision tower's linear layers: F16 weights packed at load (pack_linear) against a double
// product of the same halves, and q / k / v as one packed product (linears) against three.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/vision/vision_ops.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve::vision {
namespace {

struct HalfLinear {
  std::vector<uint16_t> w;
  Linear l;
};

HalfLinear half_linear(int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.5f);
  HalfLinear h;
  h.w.resize(static_cast<size_t>(out * in));
  for (auto& v : h.w) v = kernels::fp32_to_fp16(d(rng));
  h.l.type = kernels::DType::F16;
  h.l.out = out;
  h.l.in = in;
  h.l.bias.resize(static_cast<size_t>(out));
  for (auto& b : h.l.bias) b = d(rng);
  return h;
}

std::vector<float> inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = d(rng);
  return x;
}

TEST(VisionLinear, PackedHalvesEqualTheDoubleProduct) {
  kernels::ThreadPool pool(2);
  const int64_t rows = 37, in = 72, out = 45;
  HalfLinear h = half_linear(out, in, 1);
  h.l.weight = h.w.data();
  pack_linear(h.l);
  ASSERT_FALSE(h.l.packed.empty()) << "F16 weights pack";
  const auto x = inputs(rows * in, 2);
  std::vector<float> y(static_cast<size_t>(rows * out));
  linear(pool, x.data(), rows, h.l, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double want = h.l.bias[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) {
        want += double{kernels::fp16_to_fp32(h.w[static_cast<size_t>(o * in + i)])} *
                x[static_cast<size_t>(r * in + i)];
      }
      ASSERT_NEAR(y[static_cast<size_t>(r * out + o)], want, 1e-4) << r << ", " << o;
    }
  }
}

TEST(VisionLinear, QkvAsOneProductEqualsThreeLinears) {
  kernels::ThreadPool pool(2);
  const int64_t rows = 50, in = 64;
  HalfLinear q = half_linear(64, in, 3), k = half_linear(64, in, 4), v = half_linear(40, in, 5);
  for (HalfLinear* h : {&q, &k, &v}) {
    h->l.weight = h->w.data();
    pack_linear(h->l);
  }
  const auto x = inputs(rows * in, 6);
  auto run = [&](bool together, bool v_unpacked) {
    Linear vl;  // v's weight as it is stored, not packed
    vl.type = v.l.type;
    vl.weight = v.l.weight;
    vl.out = v.l.out;
    vl.in = v.l.in;
    vl.bias = v.l.bias;
    std::vector<std::vector<float>> ys = {std::vector<float>(rows * 64),
                                          std::vector<float>(rows * 64),
                                          std::vector<float>(rows * 40)};
    if (together) {
      const Linear* ls[] = {&q.l, &k.l, v_unpacked ? &vl : &v.l};
      float* outs[] = {ys[0].data(), ys[1].data(), ys[2].data()};
      linears(pool, x.data(), rows, ls, outs);
    } else {
      linear(pool, x.data(), rows, q.l, ys[0].data());
      linear(pool, x.data(), rows, k.l, ys[1].data());
      linear(pool, x.data(), rows, v_unpacked ? vl : v.l, ys[2].data());
    }
    return ys;
  };
  EXPECT_EQ(run(true, false), run(false, false)) << "the same f32 chain per output";
  EXPECT_EQ(run(true, true), run(false, true)) << "an unpacked member: one linear each";
}

}  // namespace
}  // namespace llmserve::vision
