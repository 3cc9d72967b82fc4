#include "llmserve/kernels/moe_routing.h"

#include <cmath>

namespace llmserve::kernels {

void moe_route(const float* logits, int64_t T, int64_t E, int64_t k, bool norm, int32_t* ids,
               float* weights) {
  for (int64_t t = 0; t < T; ++t) {
    const float* x = logits + t * E;
    float mx = x[0];
    for (int64_t e = 1; e < E; ++e) mx = std::fmax(mx, x[e]);
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += std::exp(x[e] - mx);
    int32_t* id = ids + t * k;
    float* w = weights + t * k;
    // Insertion of each expert into the running top k (k is small: 2..8).
    int64_t n = 0;
    for (int64_t e = 0; e < E; ++e) {
      if (n == k && !(x[e] > x[id[k - 1]])) continue;
      int64_t i = n < k ? n++ : k - 1;
      while (i > 0 && x[e] > x[id[i - 1]]) {
        id[i] = id[i - 1];
        --i;
      }
      id[i] = static_cast<int32_t>(e);
    }
    float picked = 0;
    for (int64_t j = 0; j < k; ++j) {
      w[j] = static_cast<float>(std::exp(x[id[j]] - mx) / sum);
      picked += w[j];
    }
    if (norm) {
      for (int64_t j = 0; j < k; ++j) w[j] /= picked;
    }
  }
}

void moe_group(const int32_t* ids, int64_t T, int64_t k, int64_t E, int32_t* offsets, int32_t* rows,
               int32_t* slot_row) {
  for (int64_t e = 0; e <= E; ++e) offsets[e] = 0;
  for (int64_t p = 0; p < T * k; ++p) ++offsets[ids[p] + 1];
  for (int64_t e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  // offsets[e] is each expert's next free row while filling; shifted back afterwards.
  for (int64_t p = 0; p < T * k; ++p) {
    const int32_t r = offsets[ids[p]]++;
    rows[r] = static_cast<int32_t>(p);
    slot_row[p] = r;
  }
  for (int64_t e = E; e > 0; --e) offsets[e] = offsets[e - 1];
  offsets[0] = 0;
}

}  // namespace llmserve::kernels
