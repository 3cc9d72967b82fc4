#include "engine/spec/ngram_proposer.h"

#include <algorithm>

namespace llmserve {

Draft ngram_match(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                  int32_t max_drafts) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (n < 2 || max_drafts <= 0 || ngram_max < ngram_min || ngram_min < 1) return {};
  const int32_t last = tokens[static_cast<size_t>(n - 1)];
  int64_t best_len = 0, best_end = -1;  // the match ends at best_end (an earlier position)
  // Scanning from the most recent earlier position backwards, a longer match replaces the best;
  // an equally long older one does not.
  for (int64_t end = n - 2; end >= 0; --end) {
    if (tokens[static_cast<size_t>(end)] != last) continue;
    int64_t len = 1;
    while (len < ngram_max && end - len >= 0 &&
           tokens[static_cast<size_t>(end - len)] == tokens[static_cast<size_t>(n - 1 - len)]) {
      ++len;
    }
    if (len > best_len) {
      best_len = len;
      best_end = end;
      if (len == ngram_max) break;
    }
  }
  if (best_len < ngram_min) return {};
  const int64_t from = best_end + 1;
  const int64_t to = std::min(n, from + max_drafts);
  return {{tokens.begin() + from, tokens.begin() + to}, static_cast<int32_t>(best_len)};
}

Status NgramProposer::propose(std::span<const DraftRequest> requests, std::vector<Draft>& drafts) {
  drafts.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    drafts[i] = ngram_match(requests[i].tokens, min_, max_, requests[i].max_drafts);
  }
  return Status::ok();
}

}  // namespace llmserve
