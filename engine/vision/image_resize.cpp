#include "engine/vision/image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

namespace llmserve::vision {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {  // Keys' cubic with a = -0.5, as Pillow
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos(double x) {
  return (x > -3.0 && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0;
}

// For each output index: the first input index, the tap count, and ksize fixed-point weights.
struct Coeffs {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;  // [out, ksize]
};

Coeffs make_coeffs(int in_size, int out_size, ResampleFilter f) {
  double (*fn)(double) = bilinear;
  double support = 1.0;
  if (f == ResampleFilter::kBicubic) {
    fn = bicubic;
    support = 2.0;
  } else if (f == ResampleFilter::kLanczos) {
    fn = lanczos;
    support = 3.0;
  }
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  support *= filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // Truncation toward zero, then clamping, as Pillow computes the window.
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = fn((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[x] / ww : k[x];
      const double fixed = w * (1 << kPrecisionBits);
      c.weights[static_cast<size_t>(xx) * c.ksize + x] =
          static_cast<int32_t>(w < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

uint8_t clip8(int64_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

RgbImage horizontal(const RgbImage& in, int out_w, ResampleFilter f) {
  const Coeffs c = make_coeffs(in.width, out_w, f);
  RgbImage out{out_w, in.height, std::vector<uint8_t>(static_cast<size_t>(out_w) * in.height * 3)};
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* row = in.pixels.data() + static_cast<size_t>(y) * in.width * 3;
    uint8_t* dst = out.pixels.data() + static_cast<size_t>(y) * out_w * 3;
    for (int xx = 0; xx < out_w; ++xx) {
      const int32_t* k = c.weights.data() + static_cast<size_t>(xx) * c.ksize;
      for (int ch = 0; ch < 3; ++ch) {
        int64_t ss = 1 << (kPrecisionBits - 1);
        for (int x = 0; x < c.count[xx]; ++x) ss += row[(x + c.first[xx]) * 3 + ch] * int64_t{k[x]};
        dst[xx * 3 + ch] = clip8(ss);
      }
    }
  }
  return out;
}

RgbImage vertical(const RgbImage& in, int out_h, ResampleFilter f) {
  const Coeffs c = make_coeffs(in.height, out_h, f);
  const size_t stride = static_cast<size_t>(in.width) * 3;
  RgbImage out{in.width, out_h, std::vector<uint8_t>(stride * out_h)};
  for (int yy = 0; yy < out_h; ++yy) {
    const int32_t* k = c.weights.data() + static_cast<size_t>(yy) * c.ksize;
    uint8_t* dst = out.pixels.data() + static_cast<size_t>(yy) * stride;
    for (size_t i = 0; i < stride; ++i) {
      int64_t ss = 1 << (kPrecisionBits - 1);
      for (int y = 0; y < c.count[yy]; ++y) {
        ss += in.pixels[(static_cast<size_t>(y) + c.first[yy]) * stride + i] * int64_t{k[y]};
      }
      dst[i] = clip8(ss);
    }
  }
  return out;
}

}  // namespace

RgbImage resize_image(const RgbImage& in, int out_width, int out_height, ResampleFilter filter) {
  if (out_width == in.width && out_height == in.height) return in;
  RgbImage tmp = out_width != in.width ? horizontal(in, out_width, filter) : in;
  return out_height != in.height ? vertical(tmp, out_height, filter) : tmp;
}

}  // namespace llmserve::vision
