#include "engine/kv_transfer/kv_messages.h"

#include <cstring>
#include <type_traits>

namespace llmserve {
namespace {

constexpr uint32_t kMagic = 0x54564b4c;  // "LKVT" little-endian
constexpr uint8_t kVersion = 2;

enum class Type : uint8_t {
  kHello = 1,
  kHelloReply = 2,
  kRelease = 3,
  kReleaseAck = 4,
  kOpen = 5,
  kOpenReply = 6
};

class Writer {
 public:
  template <typename T>
  void num(T v) {
    static_assert(std::is_integral_v<T>);
    for (size_t i = 0; i < sizeof(T); ++i) {
      out_.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i) & 0xff));
    }
  }
  void str(const std::string& s) {
    num(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}

  template <typename T>
  Status num(T* v, const char* what) {
    if (b_.size() - at_ < sizeof(T)) return short_of(what);
    uint64_t x = 0;
    for (size_t i = 0; i < sizeof(T); ++i) x |= static_cast<uint64_t>(b_[at_ + i]) << (8 * i);
    at_ += sizeof(T);
    *v = static_cast<T>(x);
    return Status::ok();
  }
  Status flag(bool* v, const char* what) {
    uint8_t b = 0;
    LLMSERVE_RETURN_IF_ERROR(num(&b, what));
    if (b > 1) return invalid_argument(std::string("kv message: ") + what + " must be 0 or 1");
    *v = b != 0;
    return Status::ok();
  }
  Status str(std::string* s, uint32_t cap, const char* what) {
    uint32_t n = 0;
    LLMSERVE_RETURN_IF_ERROR(num(&n, what));
    if (n > cap) {
      return invalid_argument(std::string("kv message: ") + what + " of " + std::to_string(n) +
                              " bytes exceeds " + std::to_string(cap));
    }
    if (b_.size() - at_ < n) return short_of(what);
    s->assign(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return Status::ok();
  }
  Status done() const {
    if (at_ != b_.size()) {
      return invalid_argument("kv message: " + std::to_string(b_.size() - at_) +
                              " bytes after the last field");
    }
    return Status::ok();
  }

 private:
  Status short_of(const char* what) const {
    return invalid_argument(std::string("kv message: ends inside ") + what);
  }
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

void write_layout(Writer& w, const KvLayout& l) {
  w.str(l.model);
  w.num(l.block_size);
  w.str(l.kv_dtype);
  w.num(l.num_layers);
  w.num(l.num_kv_heads);
  w.num(l.head_dim);
  w.num(static_cast<uint32_t>(l.array_block_bytes.size()));
  for (uint64_t b : l.array_block_bytes) w.num(b);
}

Status read_layout(Reader& r, KvLayout* l) {
  LLMSERVE_RETURN_IF_ERROR(r.str(&l->model, kKvMaxString, "model"));
  LLMSERVE_RETURN_IF_ERROR(r.num(&l->block_size, "block_size"));
  LLMSERVE_RETURN_IF_ERROR(r.str(&l->kv_dtype, kKvMaxString, "kv_dtype"));
  LLMSERVE_RETURN_IF_ERROR(r.num(&l->num_layers, "num_layers"));
  LLMSERVE_RETURN_IF_ERROR(r.num(&l->num_kv_heads, "num_kv_heads"));
  LLMSERVE_RETURN_IF_ERROR(r.num(&l->head_dim, "head_dim"));
  uint32_t n = 0;
  LLMSERVE_RETURN_IF_ERROR(r.num(&n, "array count"));
  if (n > kKvMaxArrays) return invalid_argument("kv message: too many arrays in the layout");
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t b = 0;
    LLMSERVE_RETURN_IF_ERROR(r.num(&b, "array block bytes"));
    l->array_block_bytes.push_back(b);
  }
  return Status::ok();
}

Result<KvMessage> read_body(Reader& r, Type type) {
  switch (type) {
    case Type::kHello: {
      KvHello m;
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.cookie, "cookie"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.nonce, kKvMaxString, "nonce"));
      LLMSERVE_RETURN_IF_ERROR(read_layout(r, &m.layout));
      return KvMessage(std::move(m));
    }
    case Type::kHelloReply: {
      KvHelloReply m;
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.cookie, "cookie"));
      LLMSERVE_RETURN_IF_ERROR(r.flag(&m.accepted, "accepted"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.reason, kKvMaxString, "reason"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.nonce, kKvMaxString, "nonce"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.mac, kKvMaxString, "mac"));
      return KvMessage(std::move(m));
    }
    case Type::kOpen: {
      KvOpen m;
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.cookie, "cookie"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.lease_token, kKvMaxString, "lease_token"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.mac, kKvMaxString, "mac"));
      return KvMessage(std::move(m));
    }
    case Type::kOpenReply: {
      KvOpenReply m;
      uint32_t n = 0;
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.cookie, "cookie"));
      LLMSERVE_RETURN_IF_ERROR(r.flag(&m.accepted, "accepted"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.reason, kKvMaxString, "reason"));
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.num_tokens, "num_tokens"));
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.prompt_hash, "prompt_hash"));
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.num_blocks, "num_blocks"));
      if (m.num_blocks > kKvMaxLeaseBlocks) {
        return invalid_argument("kv message: too many blocks in the lease");
      }
      LLMSERVE_RETURN_IF_ERROR(r.num(&n, "region count"));
      if (n > kKvMaxRegions) return invalid_argument("kv message: too many regions in the reply");
      for (uint32_t i = 0; i < n; ++i) {
        KvRegion g;
        LLMSERVE_RETURN_IF_ERROR(r.num(&g.first, "region first"));
        LLMSERVE_RETURN_IF_ERROR(r.num(&g.count, "region count"));
        LLMSERVE_RETURN_IF_ERROR(r.num(&g.array, "region array"));
        LLMSERVE_RETURN_IF_ERROR(r.num(&g.addr, "region address"));
        LLMSERVE_RETURN_IF_ERROR(r.str(&g.rkey, kKvMaxKeyBytes, "region rkey"));
        m.regions.push_back(std::move(g));
      }
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.mac, kKvMaxString, "mac"));
      return KvMessage(std::move(m));
    }
    case Type::kRelease: {
      KvRelease m;
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.cookie, "cookie"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.lease_token, kKvMaxString, "lease_token"));
      LLMSERVE_RETURN_IF_ERROR(r.flag(&m.pulled, "pulled"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.mac, kKvMaxString, "mac"));
      return KvMessage(std::move(m));
    }
    case Type::kReleaseAck: {
      KvReleaseAck m;
      LLMSERVE_RETURN_IF_ERROR(r.num(&m.cookie, "cookie"));
      LLMSERVE_RETURN_IF_ERROR(r.flag(&m.was_pinned, "was_pinned"));
      LLMSERVE_RETURN_IF_ERROR(r.str(&m.mac, kKvMaxString, "mac"));
      return KvMessage(std::move(m));
    }
  }
  return invalid_argument("kv message: unknown type " + std::to_string(static_cast<int>(type)));
}

void write_body(Writer& w, const KvMessage& m) {
  std::visit(
      [&w](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, KvHello>) {
          w.num(static_cast<uint8_t>(Type::kHello));
          w.num(v.cookie);
          w.str(v.nonce);
          write_layout(w, v.layout);
        } else if constexpr (std::is_same_v<T, KvHelloReply>) {
          w.num(static_cast<uint8_t>(Type::kHelloReply));
          w.num(v.cookie);
          w.num(static_cast<uint8_t>(v.accepted));
          w.str(v.reason);
          w.str(v.nonce);
          w.str(v.mac);
        } else if constexpr (std::is_same_v<T, KvOpen>) {
          w.num(static_cast<uint8_t>(Type::kOpen));
          w.num(v.cookie);
          w.str(v.lease_token);
          w.str(v.mac);
        } else if constexpr (std::is_same_v<T, KvOpenReply>) {
          w.num(static_cast<uint8_t>(Type::kOpenReply));
          w.num(v.cookie);
          w.num(static_cast<uint8_t>(v.accepted));
          w.str(v.reason);
          w.num(v.num_tokens);
          w.num(v.prompt_hash);
          w.num(v.num_blocks);
          w.num(static_cast<uint32_t>(v.regions.size()));
          for (const KvRegion& g : v.regions) {
            w.num(g.first);
            w.num(g.count);
            w.num(g.array);
            w.num(g.addr);
            w.str(g.rkey);
          }
          w.str(v.mac);
        } else if constexpr (std::is_same_v<T, KvRelease>) {
          w.num(static_cast<uint8_t>(Type::kRelease));
          w.num(v.cookie);
          w.str(v.lease_token);
          w.num(static_cast<uint8_t>(v.pulled));
          w.str(v.mac);
        } else {
          w.num(static_cast<uint8_t>(Type::kReleaseAck));
          w.num(v.cookie);
          w.num(static_cast<uint8_t>(v.was_pinned));
          w.str(v.mac);
        }
      },
      m);
}

}  // namespace

std::string encode_kv_message(const KvMessage& m) {
  Writer w;
  w.num(kMagic);
  w.num(kVersion);
  write_body(w, m);
  return w.take();
}

std::string kv_message_mac_input(KvMessage m) {
  set_kv_message_mac(m, {});
  return encode_kv_message(m);
}

const std::string& kv_message_mac(const KvMessage& m) {
  static const std::string kNone;
  return std::visit(
      [](const auto& v) -> const std::string& {
        if constexpr (requires { v.mac; }) {
          return v.mac;
        } else {
          return kNone;
        }
      },
      m);
}

void set_kv_message_mac(KvMessage& m, std::string mac) {
  std::visit(
      [&mac](auto& v) {
        if constexpr (requires { v.mac; }) v.mac = std::move(mac);
      },
      m);
}

Result<KvMessage> decode_kv_message(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  uint32_t magic = 0;
  uint8_t version = 0, type = 0;
  LLMSERVE_RETURN_IF_ERROR(r.num(&magic, "magic"));
  if (magic != kMagic) return invalid_argument("kv message: bad magic");
  LLMSERVE_RETURN_IF_ERROR(r.num(&version, "version"));
  if (version != kVersion) {
    return invalid_argument("kv message: version " + std::to_string(version) + ", expected " +
                            std::to_string(kVersion));
  }
  LLMSERVE_RETURN_IF_ERROR(r.num(&type, "type"));
  LLMSERVE_ASSIGN_OR_RETURN(KvMessage m, read_body(r, static_cast<Type>(type)));
  LLMSERVE_RETURN_IF_ERROR(r.done());
  return m;
}

}  // namespace llmserve
