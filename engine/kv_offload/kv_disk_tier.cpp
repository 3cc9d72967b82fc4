#include "engine/kv_offload/kv_disk_tier.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace llmserve {
namespace {

namespace fs = std::filesystem;

bool read_file(const std::string& path, std::vector<std::byte>& out, uint64_t limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto size = static_cast<uint64_t>(in.tellg());
  const uint64_t n = std::min(size, limit);
  out.resize(n);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  return static_cast<uint64_t>(in.gcount()) == n;
}

}  // namespace

KvDiskTier::KvDiskTier(std::string dir, int64_t budget, const BlockHash& fingerprint,
                       uint32_t block_size)
    : dir_(std::move(dir)), budget_(budget), fingerprint_(fingerprint), block_size_(block_size) {}

Result<std::unique_ptr<KvDiskTier>> KvDiskTier::open(const std::string& dir, int64_t budget_bytes,
                                                     const BlockHash& fingerprint,
                                                     uint32_t block_size) {
  if (dir.empty()) return invalid_argument("kv_offload.disk_path is empty");
  if (budget_bytes <= 0) return invalid_argument("kv_offload.disk_bytes must be > 0");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) {
    return invalid_argument("kv_offload.disk_path " + dir + " is not a directory we can create");
  }
  std::unique_ptr<KvDiskTier> t(new KvDiskTier(dir, budget_bytes, fingerprint, block_size));
  t->index_existing();
  return t;
}

std::string KvDiskTier::path_of(const BlockHash& hash) const {
  return fmt::format("{}/{:016x}{:016x}.kvp", dir_, hash.hi, hash.lo);
}

void KvDiskTier::index_existing() {
  struct Found {
    fs::file_time_type mtime;
    BlockHash hash;
    int64_t bytes;
  };
  std::vector<Found> found;
  std::vector<std::byte> buf;
  std::vector<int32_t> tokens;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(".tmp-")) {  // a write cut short by a crash
      fs::remove(e.path(), ec);
      ++stats_.corrupt_pages;
      continue;
    }
    if (!name.ends_with(".kvp") || !e.is_regular_file()) continue;
    const auto size = static_cast<int64_t>(e.file_size(ec));
    if (!read_file(e.path().string(), buf, kv_page_prefix_bytes(kKvPageMaxPrefixTokens))) {
      buf.clear();
    }
    auto h = parse_kv_page_prefix(buf, tokens);
    const bool torn =
        !h.is_ok() ||
        static_cast<int64_t>(kv_page_prefix_bytes(h->num_prefix_tokens) + h->payload_bytes) !=
            size ||
        e.path().filename().string() != fs::path(path_of(h->hash)).filename().string();
    if (torn) {
      spdlog::warn("kv_offload: {} is torn or corrupted ({}); deleted", e.path().string(),
                   h.is_ok() ? "size or name mismatch" : h.status().message());
      fs::remove(e.path(), ec);
      ++stats_.corrupt_pages;
      continue;
    }
    if (!(h->fingerprint == fingerprint_) || h->block_size != block_size_) {
      ++stats_.foreign_pages;  // another model or layout wrote it: never served, left alone
      continue;
    }
    found.push_back({e.last_write_time(ec), h->hash, size});
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) {
    if (index_.count(f.hash)) continue;
    lru_.push_back(f.hash);
    index_[f.hash] = Entry{f.bytes, std::prev(lru_.end())};
    stats_.bytes += f.bytes;
    ++stats_.pages;
    ++stats_.loaded_pages;
  }
  std::vector<BlockHash> evicted;
  evict_locked(evicted);
}

bool KvDiskTier::contains(const BlockHash& hash) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.count(hash) != 0;
}

void KvDiskTier::erase_locked(const BlockHash& hash, bool delete_file) {
  auto it = index_.find(hash);
  if (it == index_.end()) return;
  stats_.bytes -= it->second.bytes;
  --stats_.pages;
  lru_.erase(it->second.lru);
  index_.erase(it);
  if (delete_file) {
    std::error_code ec;
    fs::remove(path_of(hash), ec);
  }
}

void KvDiskTier::evict_locked(std::vector<BlockHash>& evicted) {
  while (stats_.bytes > budget_ && !lru_.empty()) {
    const BlockHash victim = lru_.front();
    erase_locked(victim, true);
    ++stats_.evicted_pages;
    evicted.push_back(victim);
  }
}

Status KvDiskTier::store(const KvPageHeader& header, std::span<const int32_t> tokens,
                         std::span<const std::byte> payload, std::vector<BlockHash>& evicted) {
  const auto size = static_cast<int64_t>(
      kv_page_prefix_bytes(static_cast<uint32_t>(tokens.size())) + payload.size());
  if (size > budget_) return resource_exhausted("kv page larger than kv_offload.disk_bytes");
  if (contains(header.hash)) return already_exists("kv page already on disk");
  const std::vector<std::byte> bytes = encode_kv_page(header, tokens, payload);
  const std::string path = path_of(header.hash);
  const std::string tmp =
      fmt::format("{}/.tmp-{:016x}{:016x}", dir_, header.hash.hi, header.hash.lo);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    std::error_code ec;
    if (!out || (fs::rename(tmp, path, ec), ec)) {
      fs::remove(tmp, ec);
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.write_errors;
      return unavailable("kv_offload: cannot write " + path);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  // A child is inserted just before its parent in the LRU list: evicted first.
  auto parent = index_.find(header.parent);
  auto at =
      header.parent == BlockHash{} || parent == index_.end() ? lru_.end() : parent->second.lru;
  auto pos = lru_.insert(at, header.hash);
  index_[header.hash] = Entry{size, pos};
  stats_.bytes += size;
  ++stats_.pages;
  ++stats_.stored_pages;
  evict_locked(evicted);
  return Status::ok();
}

Result<KvPageView> KvDiskTier::read(const BlockHash& hash, std::vector<std::byte>& file_bytes,
                                    std::vector<int32_t>& token_storage) {
  if (!contains(hash)) return not_found("kv page not on disk");
  const std::string path = path_of(hash);
  Result<KvPageView> view = data_loss("kv page: unreadable");
  if (read_file(path, file_bytes, kKvPageMaxPayloadBytes))
    view = parse_kv_page(file_bytes, token_storage);
  if (view.is_ok() &&
      (!(view->header.hash == hash) || !(view->header.fingerprint == fingerprint_) ||
       view->header.block_size != block_size_)) {
    view = data_loss("kv page: header names another page or fingerprint");
  }
  if (!view.is_ok()) {
    spdlog::warn("kv_offload: {}: {}; deleted, the prefix is recomputed", path,
                 view.status().message());
    std::lock_guard<std::mutex> lock(mu_);
    erase_locked(hash, true);
    ++stats_.corrupt_pages;
  }
  return view;
}

void KvDiskTier::touch_chain(std::span<const BlockHash> chain) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    auto e = index_.find(*it);
    if (e != index_.end()) lru_.splice(lru_.end(), lru_, e->second.lru);
  }
}

void KvDiskTier::remove(const BlockHash& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  erase_locked(hash, true);
}

KvDiskTierStats KvDiskTier::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace llmserve
