// Finds special / added token strings in text before BPE: at each position the longest special
// token that starts there wins (leftmost-longest), the text between them is left for BPE.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace llmserve {

class SpecialTokenSplitter {
 public:
  struct Fragment {
    std::string_view text;  // plain text when id < 0
    int32_t id = -1;        // the special token otherwise
  };

  SpecialTokenSplitter() = default;
  // tokens: (text, id) pairs; the views must outlive the splitter. Empty texts are ignored.
  explicit SpecialTokenSplitter(std::vector<std::pair<std::string_view, int32_t>> tokens);

  bool empty() const { return count_ == 0; }
  // Appends the fragments of text, in order, to out.
  void split(std::string_view text, std::vector<Fragment>& out) const;

 private:
  // Tokens bucketed by first byte, longest first.
  std::vector<std::vector<std::pair<std::string_view, int32_t>>> by_first_byte_;
  size_t count_ = 0;
};

}  // namespace llmserve
