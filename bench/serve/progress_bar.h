// A one-line progress bar redrawn in place ("\r") on a stream, for a terminal.
#pragma once

#include <chrono>
#include <cstdio>

namespace llmserve::bench {

class ProgressBar {
 public:
  // Draws nothing unless `enabled` (callers pass isatty(stderr)).
  ProgressBar(std::FILE* out, bool enabled);

  // Redraws for `done` of `total`; cheap to call often (redraws at most ~10 times a second).
  void update(int done, int total);
  // Ends the line.
  void finish();

 private:
  std::FILE* out_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace llmserve::bench
