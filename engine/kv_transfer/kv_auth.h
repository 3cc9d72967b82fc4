// The shared secret of one deployment's daemons and what it proves: HMAC-SHA256 tags over the
// transport's control messages (both directions, bound to both sides' connection nonces) and
// over the handoffs a producer answers (kv_transfer_params.signature), so a peer or a client
// without the secret can neither pull, release, nor forge a handoff. Also the CSPRNG behind
// lease tokens and nonces.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace llmserve {

inline constexpr size_t kKvMacBytes = 32;    // HMAC-SHA256
inline constexpr size_t kKvNonceBytes = 16;  // per connection side
inline constexpr size_t kKvMinSecretBytes = 16;

// `n` bytes from the kernel CSPRNG (getrandom); "" if it failed.
std::string kv_random_bytes(size_t n);
// Lower-case hex of `bytes`.
std::string kv_hex(std::string_view bytes);
// 128 random bits as 32 hex digits (lease tokens); "" if the CSPRNG failed.
std::string kv_random_token();

class KvAuth {
 public:
  // An empty secret is refused (FAILED_PRECONDITION names kv_transfer.secret), as is one shorter
  // than kKvMinSecretBytes.
  static Result<KvAuth> create(std::string secret);
  KvAuth() = default;

  // HMAC-SHA256 over `label` and each part, every one length-prefixed (so no two different part
  // lists give the same input). kKvMacBytes raw bytes.
  std::string mac(std::string_view label, std::initializer_list<std::string_view> parts) const;
  // Constant-time comparison of `tag` against mac(label, parts).
  bool verify(std::string_view tag, std::string_view label,
              std::initializer_list<std::string_view> parts) const;
  bool empty() const { return secret_.empty(); }

 private:
  explicit KvAuth(std::string secret) : secret_(std::move(secret)) {}
  std::string secret_;
};

// Constant-time equality of two byte strings (false when the lengths differ).
bool kv_equal_ct(std::string_view a, std::string_view b);

}  // namespace llmserve
