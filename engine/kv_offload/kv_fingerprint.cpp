#include "engine/kv_offload/kv_fingerprint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <xxhash.h>

namespace llmserve {
namespace {

namespace fs = std::filesystem;

Result<std::string> file_identity(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("kv_offload: cannot read " + path.string());
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return not_found("kv_offload: cannot stat " + path.string());
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  std::vector<char> buf;
  auto window = [&](uint64_t at, uint64_t n) {
    n = std::min(n, size - std::min(at, size));
    buf.resize(n);
    in.seekg(static_cast<std::streamoff>(at));
    in.read(buf.data(), static_cast<std::streamsize>(n));
    XXH3_128bits_update(st, buf.data(), static_cast<size_t>(in.gcount()));
    in.clear();
  };
  window(0, 1 << 20);
  for (uint64_t i = 0; i < 64; ++i) window(size / 64 * i, 64 << 10);
  window(size > (1u << 20) ? size - (1u << 20) : 0, 1 << 20);
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return fmt::format("{}:{}:{:016x}{:016x}", path.filename().string(), size, h.high64, h.low64);
}

}  // namespace

Result<std::string> kv_weights_identity(const std::string& model_path) {
  std::error_code ec;
  if (!fs::is_directory(model_path, ec)) return file_identity(model_path);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(model_path, ec)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string id;
  for (const fs::path& f : files) {
    LLMSERVE_ASSIGN_OR_RETURN(std::string one, file_identity(f));
    id += one + ";";
  }
  return id;
}

KvFingerprint kv_fingerprint(const KvFingerprintInputs& in) {
  std::string bytes;
  for (uint64_t b : in.array_block_bytes) bytes += fmt::format("{},", b);
  KvFingerprint f;
  f.text = fmt::format(
      "weights={} backend={} compute={} kv_dtype={} block_size={} layers={} kv_heads={} "
      "head_dim={} array_block_bytes=[{}] rope={}",
      in.weights_identity, in.backend, in.compute, in.kv_dtype, in.block_size, in.num_layers,
      in.num_kv_heads, in.head_dim, bytes, in.rope);
  const XXH128_hash_t h = XXH3_128bits(f.text.data(), f.text.size());
  f.digest = BlockHash{h.low64, h.high64};
  if (f.digest == BlockHash{}) f.digest.lo = 1;
  return f;
}

}  // namespace llmserve
