#include "engine/kv_transfer/kv_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <cerrno>

namespace llmserve {

std::string kv_random_bytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out.data() + got, n - got, 0);  // blocks until seeded
    if (r > 0)
      got += static_cast<size_t>(r);
    else if (errno != EINTR)
      break;
  }
  if (got < n) out.clear();  // never a weak token: callers treat empty as a failure
  return out;
}

std::string kv_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string kv_random_token() {
  const std::string bytes = kv_random_bytes(16);
  return bytes.empty() ? std::string() : kv_hex(bytes);
}

Result<KvAuth> KvAuth::create(std::string secret) {
  if (secret.empty()) {
    return failed_precondition(
        "kv_transfer.secret (or kv_transfer.secret_file) must be set when kv_transfer.role is not "
        "none: the daemons of one deployment share it, and a peer without it can neither pull KV "
        "nor forge a handoff");
  }
  if (secret.size() < kKvMinSecretBytes) {
    return failed_precondition("kv_transfer.secret: must be at least " +
                               std::to_string(kKvMinSecretBytes) + " bytes, got " +
                               std::to_string(secret.size()));
  }
  return KvAuth(std::move(secret));
}

std::string KvAuth::mac(std::string_view label,
                        std::initializer_list<std::string_view> parts) const {
  std::string input;
  auto add = [&input](std::string_view p) {
    const auto n = static_cast<uint64_t>(p.size());
    for (int i = 0; i < 8; ++i) input.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    input.append(p);
  };
  add(label);
  for (std::string_view p : parts) add(p);
  std::string out(kKvMacBytes, '\0');
  size_t len = 0;
  unsigned char* res =
      EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret_.data(), secret_.size(),
                reinterpret_cast<const unsigned char*>(input.data()), input.size(),
                reinterpret_cast<unsigned char*>(out.data()), out.size(), &len);
  if (res == nullptr || len != kKvMacBytes) return {};  // verifies against nothing
  return out;
}

bool KvAuth::verify(std::string_view tag, std::string_view label,
                    std::initializer_list<std::string_view> parts) const {
  if (secret_.empty() || tag.size() != kKvMacBytes) return false;
  return kv_equal_ct(tag, mac(label, parts));
}

bool kv_equal_ct(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace llmserve
