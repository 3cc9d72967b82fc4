// Times one image through Gemma 3's vision side: decoding + preprocessing, then the SigLIP tower
// and the projector, --reps times (the first is also timed; the median is printed).
//   bench_vision_encoder --mmproj FILE.gguf | --hf DIR  --image FILE [--threads 2] [--reps 3]
// Prints one JSON line: {"preprocess_ms": [...], "encode_ms": [...], "median_encode_ms": x, ...}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/vision/vision_model.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string list(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace llmserve;
  std::string mmproj, hf, image;
  int threads = 2, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mmproj")
      mmproj = v;
    else if (k == "--hf")
      hf = v;
    else if (k == "--image")
      image = v;
    else if (k == "--threads")
      threads = std::stoi(v);
    else if (k == "--reps")
      reps = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if ((mmproj.empty() == hf.empty()) || image.empty() || threads < 1 || reps < 1) {
    std::fprintf(stderr,
                 "usage: %s --mmproj FILE | --hf DIR --image FILE [--threads N] [--reps N]\n",
                 argv[0]);
    return 2;
  }
  const auto t_load = std::chrono::steady_clock::now();
  auto model =
      mmproj.empty() ? vision::VisionModel::load(hf) : vision::VisionModel::load_mmproj(mmproj, {});
  if (!model.is_ok()) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  const double load_ms = ms_since(t_load);
  std::ifstream f(image, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                   std::istreambuf_iterator<char>());
  kernels::ThreadPool pool(threads);
  std::vector<double> pre_ms, enc_ms;
  size_t rows = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto img = vision::decode_image(bytes, vision::ImageLimits{});
    if (!img.is_ok()) {
      std::fprintf(stderr, "%s\n", img.status().to_string().c_str());
      return 1;
    }
    auto pixels = (*model)->preprocessor().process(*img);
    if (!pixels.is_ok()) {
      std::fprintf(stderr, "%s\n", pixels.status().to_string().c_str());
      return 1;
    }
    pre_ms.push_back(ms_since(t0));
    t0 = std::chrono::steady_clock::now();
    const std::vector<float> out = (*model)->encode_pixels(pool, pixels->data());
    enc_ms.push_back(ms_since(t0));
    rows = out.size() / static_cast<size_t>((*model)->config().text_hidden);
  }
  const auto& c = (*model)->config();
  std::printf(
      "{\"load_ms\": %.1f, \"image_size\": %lld, \"patches\": %lld, \"layers\": %lld, "
      "\"hidden\": %lld, \"soft_tokens\": %zu, \"threads\": %d, \"preprocess_ms\": %s, "
      "\"encode_ms\": %s, \"median_preprocess_ms\": %.1f, \"median_encode_ms\": %.1f}\n",
      load_ms, static_cast<long long>(c.image_size), static_cast<long long>(c.num_patches()),
      static_cast<long long>(c.num_layers), static_cast<long long>(c.hidden), rows, threads,
      list(pre_ms).c_str(), list(enc_ms).c_str(), median(pre_ms), median(enc_ms));
  return 0;
}
