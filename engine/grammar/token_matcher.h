// One sample's position in its grammar: which tokens may come next, and advancing over the
// tokens it emits. Copying forks the state (a speculative chain's advanced copies); the copy and
// the original then move independently. Not thread-safe; a sample's matcher lives with it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace llmserve {

class TokenMatcher {
 public:
  struct Impl;
  explicit TokenMatcher(std::unique_ptr<Impl> impl);
  TokenMatcher(const TokenMatcher& other);
  TokenMatcher& operator=(const TokenMatcher& other);
  TokenMatcher(TokenMatcher&&) noexcept;
  TokenMatcher& operator=(TokenMatcher&&) noexcept;
  ~TokenMatcher();

  // Writes the allowed next tokens into `mask` (token_bitmask_words(vocab) words).
  void fill_next_token_mask(std::span<uint32_t> mask);
  // Advances over `token`; false (state unchanged) when the grammar does not allow it.
  bool accept(int32_t token);
  // Undoes the last `num_tokens` accepted tokens (at most the tokens accepted so far).
  void rollback(int32_t num_tokens);
  // A stop token ended the grammar: nothing more may follow.
  bool is_terminated() const;
  // The text so far is a complete match (a stop token may come next).
  bool is_completed() const;
  int32_t num_accepted() const { return num_accepted_; }

 private:
  std::unique_ptr<Impl> impl_;
  int32_t num_accepted_ = 0;
};

}  // namespace llmserve
