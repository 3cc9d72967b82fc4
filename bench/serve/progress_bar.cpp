#include "bench/serve/progress_bar.h"

#include <string>

namespace llmserve::bench {

ProgressBar::ProgressBar(std::FILE* out, bool enabled)
    : out_(out), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int done, int total) {
  if (!enabled_ || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 40;
  const int filled = static_cast<int>(static_cast<long>(done) * kWidth / total);
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_, "\r[%s] %d/%d  %.1fs", bar.c_str(), done, total, elapsed);
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
}

}  // namespace llmserve::bench
