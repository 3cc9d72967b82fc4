#include "engine/runner/fused_views.h"

#include <algorithm>

namespace llmserve {

void FusedViews::set(const float* name, View view) {
  for (auto& [n, v] : views_) {
    if (n == name) {
      v = view;
      return;
    }
  }
  views_.emplace_back(name, view);
}

void FusedViews::erase(const float* name) {
  std::erase_if(views_, [name](const auto& e) { return e.first == name; });
}

FusedViews::View FusedViews::resolve(const float* p, int64_t natural_stride) const {
  for (const auto& [n, v] : views_) {
    if (n == p) return v;
  }
  return View{const_cast<float*>(p), natural_stride};
}

}  // namespace llmserve
