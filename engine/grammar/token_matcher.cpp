#include "engine/grammar/token_matcher.h"

#include <algorithm>

#include "engine/grammar/token_bitmask.h"
#include "engine/grammar/xgrammar_impl.h"

namespace llmserve {

TokenMatcher::TokenMatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TokenMatcher::TokenMatcher(const TokenMatcher& other)
    : impl_(std::make_unique<Impl>(
          Impl{other.impl_->matcher.Fork(), other.impl_->vocab_size, other.impl_->denied})),
      num_accepted_(other.num_accepted_) {}

TokenMatcher& TokenMatcher::operator=(const TokenMatcher& other) {
  if (this != &other) *this = TokenMatcher(other);
  return *this;
}

TokenMatcher::TokenMatcher(TokenMatcher&&) noexcept = default;
TokenMatcher& TokenMatcher::operator=(TokenMatcher&&) noexcept = default;
TokenMatcher::~TokenMatcher() = default;

void TokenMatcher::fill_next_token_mask(std::span<uint32_t> mask) {
  int64_t shape[1] = {token_bitmask_words(impl_->vocab_size)};
  if (static_cast<int64_t>(mask.size()) < shape[0]) return;
  DLTensor t{};
  t.data = mask.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLInt, 32, 1};
  t.shape = shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  if (impl_->matcher.IsTerminated()) {
    std::fill(mask.begin(), mask.end(), 0u);
    return;
  }
  impl_->matcher.FillNextTokenBitmask(&t);
  if (impl_->denied) {
    const std::vector<uint32_t>& d = *impl_->denied;
    for (size_t w = 0; w < d.size() && w < mask.size(); ++w) mask[w] &= ~d[w];
  }
}

bool TokenMatcher::accept(int32_t token) {
  if (token < 0 || token >= impl_->vocab_size || impl_->matcher.IsTerminated()) return false;
  if (impl_->denied) {
    const auto w = static_cast<size_t>(token) / 32;
    if (w < impl_->denied->size() && (((*impl_->denied)[w] >> (token % 32)) & 1u)) return false;
  }
  const bool ok = impl_->matcher.AcceptToken(token);
  num_accepted_ += ok;
  return ok;
}

void TokenMatcher::rollback(int32_t num_tokens) {
  num_tokens = std::clamp(num_tokens, 0, num_accepted_);
  if (num_tokens == 0) return;
  impl_->matcher.Rollback(num_tokens);
  num_accepted_ -= num_tokens;
}

bool TokenMatcher::is_terminated() const {
  return impl_->matcher.IsTerminated();
}

bool TokenMatcher::is_completed() const {
  return impl_->matcher.IsCompleted();
}

}  // namespace llmserve
