#include "engine/tokenizer/special_token_splitter.h"

#include <algorithm>

namespace llmserve {

SpecialTokenSplitter::SpecialTokenSplitter(std::vector<std::pair<std::string_view, int32_t>> tokens)
    : by_first_byte_(256) {
  for (const auto& t : tokens) {
    if (t.first.empty()) continue;
    by_first_byte_[static_cast<uint8_t>(t.first[0])].push_back(t);
    ++count_;
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }
}

void SpecialTokenSplitter::split(std::string_view text, std::vector<Fragment>& out) const {
  if (count_ == 0) {
    if (!text.empty()) out.push_back({text, -1});
    return;
  }
  size_t plain_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const auto& bucket = by_first_byte_[static_cast<uint8_t>(text[pos])];
    const std::pair<std::string_view, int32_t>* hit = nullptr;
    for (const auto& t : bucket) {
      if (text.compare(pos, t.first.size(), t.first) == 0) {
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    if (pos > plain_start) out.push_back({text.substr(plain_start, pos - plain_start), -1});
    out.push_back({hit->first, hit->second});
    pos += hit->first.size();
    plain_start = pos;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
}

}  // namespace llmserve
