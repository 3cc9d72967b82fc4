#include "server/common/kv_transfer_params.h"

#include <cinttypes>
#include <cstdio>
#include <string>

namespace llmserve {
namespace {

using nlohmann::json;

constexpr size_t kMaxString = 256;
constexpr size_t kMaxBlocks = size_t{1} << 20;

class Reader {
 public:
  Reader(const json& obj, std::string_view field) : obj_(obj), field_(field) {}

  Status error(const char* key, const std::string& what) const {
    return invalid_argument(std::string(field_) + "." + key + ": " + what);
  }
  Status string(const char* key, std::string* out, size_t max = kMaxString) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || !it->is_string()) return error(key, "expected a string");
    const auto& s = it->get_ref<const std::string&>();
    if (s.empty() || s.size() > max) {
      return error(key, "expected 1 to " + std::to_string(max) + " characters");
    }
    *out = s;
    return Status::ok();
  }
  Status integer(const char* key, int64_t lo, int64_t hi, int64_t* out) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || !it->is_number_integer()) return error(key, "expected an integer");
    const bool bad = it->is_number_unsigned()
                         ? (it->get<uint64_t>() > static_cast<uint64_t>(hi) ||
                            (lo > 0 && it->get<uint64_t>() < static_cast<uint64_t>(lo)))
                         : (it->get<int64_t>() < lo || it->get<int64_t>() > hi);
    if (bad) {
      return error(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    *out = it->get<int64_t>();
    return Status::ok();
  }
  template <typename T>
  Status int_field(const char* key, int64_t lo, int64_t hi, T* out) const {
    int64_t v = 0;
    LLMSERVE_RETURN_IF_ERROR(integer(key, lo, hi, &v));
    *out = static_cast<T>(v);
    return Status::ok();
  }
  bool flag(const char* key) const {
    auto it = obj_.find(key);
    return it != obj_.end() && it->is_boolean() && it->get<bool>();
  }

 private:
  const json& obj_;
  std::string_view field_;
};

Status read_handoff(const Reader& r, const json& obj, KvHandoff* h) {
  LLMSERVE_RETURN_IF_ERROR(r.string("remote_engine_id", &h->engine_id));
  LLMSERVE_RETURN_IF_ERROR(r.string("remote_request_id", &h->lease_id));
  LLMSERVE_RETURN_IF_ERROR(r.string("remote_host", &h->host));
  LLMSERVE_RETURN_IF_ERROR(r.int_field("remote_port", 1, 65535, &h->port));
  LLMSERVE_RETURN_IF_ERROR(r.int_field("tp_size", 1, 1, &h->tp_size));
  auto blocks = obj.find("remote_block_ids");
  if (blocks == obj.end() || !blocks->is_array() || blocks->empty() ||
      blocks->size() > kMaxBlocks) {
    return r.error("remote_block_ids", "expected a non-empty array of block ids");
  }
  for (const json& b : *blocks) {
    if (!b.is_number_integer() || b.get<int64_t>() < 1 || b.get<int64_t>() > INT32_MAX) {
      return r.error("remote_block_ids", "expected block ids in [1, 2^31)");
    }
    h->block_ids.push_back(static_cast<int32_t>(b.get<int64_t>()));
  }
  LLMSERVE_RETURN_IF_ERROR(r.int_field("num_tokens", 1, INT32_MAX, &h->num_tokens));
  std::string hash;
  LLMSERVE_RETURN_IF_ERROR(r.string("prompt_hash", &hash, 16));
  char* end = nullptr;
  h->prompt_hash = std::strtoull(hash.c_str(), &end, 16);
  if (end != hash.c_str() + hash.size()) return r.error("prompt_hash", "expected hex digits");
  KvLayout& l = h->layout;
  LLMSERVE_RETURN_IF_ERROR(r.string("model", &l.model, 4096));
  LLMSERVE_RETURN_IF_ERROR(r.string("kv_dtype", &l.kv_dtype));
  LLMSERVE_RETURN_IF_ERROR(r.int_field("block_size", 1, 1 << 20, &l.block_size));
  LLMSERVE_RETURN_IF_ERROR(r.int_field("num_layers", 1, 1 << 20, &l.num_layers));
  LLMSERVE_RETURN_IF_ERROR(r.int_field("num_kv_heads", 1, 1 << 20, &l.num_kv_heads));
  LLMSERVE_RETURN_IF_ERROR(r.int_field("head_dim", 1, 1 << 20, &l.head_dim));
  if (auto sig = obj.find("signature"); sig != obj.end() && !sig->is_null()) {
    LLMSERVE_RETURN_IF_ERROR(r.string("signature", &h->signature, 64));
  }
  return Status::ok();
}

}  // namespace

Result<KvTransferRequest> parse_kv_transfer_params(const json& v, std::string_view field) {
  KvTransferRequest out;
  if (v.is_null()) return out;
  if (!v.is_object()) return invalid_argument(std::string(field) + ": expected a JSON object");
  const Reader r(v, field);
  out.produce = r.flag("do_remote_decode");
  if (!r.flag("do_remote_prefill")) return out;
  auto proto = v.find("pairing_protocol");
  if (proto == v.end() || !proto->is_string() || proto->get<std::string>() != kKvPairingProtocol) {
    return out;  // another engine's handoff: nothing to pull from here
  }
  LLMSERVE_RETURN_IF_ERROR(read_handoff(r, v, &out.handoff));
  out.consume = true;
  return out;
}

json kv_transfer_params_json(const KvHandoff& h) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016" PRIx64, h.prompt_hash);
  json out = {{"do_remote_prefill", true},
          {"do_remote_decode", false},
          {"remote_engine_id", h.engine_id},
          {"remote_request_id", h.lease_id},
          {"remote_host", h.host},
          {"remote_port", h.port},
          {"remote_block_ids", h.block_ids},
          {"tp_size", h.tp_size},
          {"pairing_protocol", kKvPairingProtocol},
          {"model", h.layout.model},
          {"block_size", h.layout.block_size},
          {"kv_dtype", h.layout.kv_dtype},
          {"num_layers", h.layout.num_layers},
          {"num_kv_heads", h.layout.num_kv_heads},
          {"head_dim", h.layout.head_dim},
          {"num_tokens", h.num_tokens},
          {"prompt_hash", hash}};
  if (!h.signature.empty()) out["signature"] = h.signature;
  return out;
}

}  // namespace llmserve
