#include "engine/kv_transfer/kv_handoff.h"

namespace llmserve {
namespace {

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

}  // namespace

std::string kv_handoff_signed_bytes(const KvHandoff& h) {
  std::string out;
  put_str(out, kKvPairingProtocol);
  put_str(out, h.engine_id);
  put_str(out, h.lease_id);
  put_str(out, h.host);
  put_u64(out, static_cast<uint32_t>(h.port));
  put_u64(out, h.block_ids.size());
  for (int32_t b : h.block_ids) put_u64(out, static_cast<uint32_t>(b));
  put_u64(out, static_cast<uint32_t>(h.num_tokens));
  put_u64(out, h.prompt_hash);
  put_u64(out, static_cast<uint32_t>(h.tp_size));
  const KvLayout& l = h.layout;
  put_str(out, l.model);
  put_u64(out, static_cast<uint32_t>(l.block_size));
  put_str(out, l.kv_dtype);
  put_u64(out, static_cast<uint32_t>(l.num_layers));
  put_u64(out, static_cast<uint32_t>(l.num_kv_heads));
  put_u64(out, static_cast<uint32_t>(l.head_dim));
  return out;
}

}  // namespace llmserve
