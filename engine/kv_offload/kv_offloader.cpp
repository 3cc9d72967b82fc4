#include "engine/kv_offload/kv_offloader.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "engine/kv_offload/kv_restore_check.h"

namespace llmserve {

KvOffloader::KvOffloader(const KvOffloadOptions& options, std::unique_ptr<KvBlockIo> io,
                         KvFingerprint fingerprint, uint32_t block_size,
                         std::unique_ptr<KvHostTier> host, std::unique_ptr<KvDiskTier> disk,
                         std::function<void()> wake)
    : options_(options),
      io_(std::move(io)),
      fingerprint_(std::move(fingerprint)),
      block_size_(block_size),
      host_(std::move(host)),
      disk_(std::move(disk)),
      wake_(std::move(wake)) {
  worker_ = std::thread([this] { run(); });
}

KvOffloader::~KvOffloader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  persist_host_pages();
}

void KvOffloader::persist_host_pages() {
  if (host_ == nullptr || disk_ == nullptr) return;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t written = 0;
  for (KvHostPage& p : host_->drain()) {
    if (disk_->contains(p.header.hash)) continue;
    const size_t n = p.tokens.size();
    PendingWrite w{p.header, std::make_shared<const std::vector<int32_t>>(std::move(p.tokens)), n,
                   std::move(p.payload)};
    do_write(w);
    ++written;
  }
  if (written > 0) {
    spdlog::info("KV tiers: wrote {} host-memory pages to disk at shutdown in {:.2f} s", written,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

bool KvOffloader::on_tier(const BlockHash& hash) const {
  return (host_ != nullptr && host_->contains(hash)) || (disk_ != nullptr && disk_->contains(hash));
}

bool KvOffloader::wants(const BlockHash& hash) {
  if (on_tier(hash)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<int32_t>(writes_.size() + stores_.size()) >= options_.max_pending_writes) {
    ++stats_.dropped_pages;
    return false;
  }
  return true;
}

void KvOffloader::store(KvStoreJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stores_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void KvOffloader::restore(KvRestoreJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    restores_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void KvOffloader::count_miss() {
  std::lock_guard<std::mutex> lock(mu_);
  if (host_ != nullptr) ++stats_.host_misses;
  if (disk_ != nullptr) ++stats_.disk_misses;
}

std::vector<int32_t> KvOffloader::take_copied() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(copied_, {});
}

std::vector<KvRestoreResult> KvOffloader::take_restored() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(restored_, {});
}

void KvOffloader::release(KvRestoreResult& result) {
  if (host_ != nullptr) {
    for (const BlockHash& h : result.host_in_use) host_->release(h);
  }
  result.host_in_use.clear();
  result.pages.clear();
}

std::vector<KvTierEvent> KvOffloader::take_events() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(events_, {});
}

void KvOffloader::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] {
    return busy_ == 0 && stores_.empty() && restores_.empty() && writes_.empty();
  });
}

KvOffloadStats KvOffloader::stats() const {
  KvOffloadStats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = stats_;
  }
  if (host_ != nullptr) s.host = host_->stats();
  if (disk_ != nullptr) s.disk = disk_->stats();
  return s;
}

KvPageHeader KvOffloader::header_of(const KvStoreJob& j) const {
  KvPageHeader h;
  h.block_size = block_size_;
  h.fingerprint = fingerprint_.digest;
  h.hash = j.hash;
  h.parent = j.parent;
  h.salt = j.salt;
  return h;
}

void KvOffloader::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] {
      return stop_ || !stores_.empty() || !restores_.empty() || !writes_.empty();
    });
    if (stop_ && stores_.empty() && restores_.empty() && writes_.empty()) break;
    ++busy_;
    if (!stores_.empty()) {
      // Copy every pinned block out first: the loop unpins them at its next pass.
      std::deque<KvStoreJob> jobs = std::exchange(stores_, {});
      lock.unlock();
      std::deque<PendingWrite> writes;
      std::vector<KvTierEvent> events;
      const std::vector<int32_t> ids = do_copy(jobs, writes, events);
      lock.lock();
      copied_.insert(copied_.end(), ids.begin(), ids.end());
      for (PendingWrite& w : writes) writes_.push_back(std::move(w));
      for (KvTierEvent& e : events) events_.push_back(std::move(e));
      lock.unlock();
      wake_();
      lock.lock();
    } else if (!restores_.empty()) {
      KvRestoreJob job = std::move(restores_.front());
      restores_.pop_front();
      lock.unlock();
      do_restore(job);
      lock.lock();
    } else if (!writes_.empty()) {
      PendingWrite w = std::move(writes_.front());
      writes_.pop_front();
      lock.unlock();
      do_write(w);
      lock.lock();
    }
    --busy_;
    idle_cv_.notify_all();
  }
}

std::vector<int32_t> KvOffloader::do_copy(std::deque<KvStoreJob>& jobs,
                                          std::deque<PendingWrite>& writes,
                                          std::vector<KvTierEvent>& events) {
  std::vector<int32_t> ids;
  int64_t host_written = 0, demoted = 0;
  for (KvStoreJob& j : jobs) {
    ids.push_back(j.block_id);
    const auto n = static_cast<size_t>(j.block_index + 1) * block_size_;
    if (j.tokens == nullptr || j.tokens->size() < n) continue;
    const KvPageHeader h = header_of(j);
    const std::span<const int32_t> prefix(j.tokens->data(), n);
    std::vector<int32_t> own(prefix.end() - block_size_, prefix.end());
    if (host_ != nullptr) {
      std::vector<KvHostPage> evicted;
      std::byte* slot = host_->reserve(h, prefix, evicted);
      for (KvHostPage& e : evicted) {
        events.push_back({false, e.header.hash, {}, {}, "CPU"});
        if (disk_ == nullptr || disk_->contains(e.header.hash)) continue;
        const size_t m = e.tokens.size();
        writes.push_back({e.header,
                          std::make_shared<const std::vector<int32_t>>(std::move(e.tokens)), m,
                          std::move(e.payload)});
        ++demoted;
      }
      if (slot != nullptr) {
        const Status st = io_->copy_out(j.block_id, std::span<std::byte>(slot, io_->block_bytes()));
        if (st.is_ok()) {
          host_->commit(h.hash);
          host_written += static_cast<int64_t>(io_->block_bytes());
          events.push_back({true, h.hash, h.parent, std::move(own), "CPU"});
        } else {
          host_->abort(h.hash);
          spdlog::warn("kv_offload: copying block {} out failed: {}", j.block_id, st.message());
        }
        continue;
      }
    }
    if (disk_ == nullptr) continue;  // the host tier had no room and there is no disk: dropped
    PendingWrite w{h, j.tokens, n, std::vector<std::byte>(io_->block_bytes())};
    const Status st = io_->copy_out(j.block_id, w.payload);
    if (!st.is_ok()) {
      spdlog::warn("kv_offload: copying block {} out failed: {}", j.block_id, st.message());
      continue;
    }
    writes.push_back(std::move(w));
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.host_bytes_written += host_written;
  stats_.demoted_pages += demoted;
  return ids;
}

void KvOffloader::do_restore(KvRestoreJob& job) {
  const auto t0 = std::chrono::steady_clock::now();
  KvRestoreResult r;
  r.key = job.key;
  r.first_block = job.first_block;
  std::vector<std::byte> file;
  std::vector<int32_t> tokens;
  int64_t read = 0, rejected = 0, host_read = 0;
  bool host_missed = false;
  BlockHash parent = job.parent;
  for (size_t i = 0; i < job.hashes.size(); ++i) {
    const KvRestoreTarget want{fingerprint_.digest,
                               block_size_,
                               io_->block_bytes(),
                               job.hashes[i],
                               parent,
                               job.salt,
                               job.first_block + static_cast<int32_t>(i),
                               job.tokens};
    std::optional<KvPageView> page;
    bool from_host = false;
    if (host_ != nullptr) {
      page = host_->acquire(job.hashes[i]);
      from_host = page.has_value();
      host_missed = host_missed || !from_host;
    }
    if (!page && disk_ != nullptr) {
      auto read_page = disk_->read(job.hashes[i], file, tokens);
      if (read_page.is_ok()) page = *read_page;  // else absent, or corrupt (deleted and counted)
    }
    if (!page) break;
    const std::string why = kv_restore_mismatch(*page, want);
    if (!why.empty()) {
      if (from_host) host_->release(job.hashes[i]);
      spdlog::info(
          "kv_offload: a {} page for block {} is not this request's ({} do not match); "
          "recomputing",
          from_host ? "host" : "disk", want.block_index, why);
      ++rejected;
      break;
    }
    if (from_host) {
      r.pages.push_back(page->payload);
      r.host_in_use.push_back(job.hashes[i]);
      ++r.from_host;
      host_read += static_cast<int64_t>(page->payload.size());
    } else {
      read += static_cast<int64_t>(file.size());
      r.owned.emplace_back(page->payload.begin(), page->payload.end());
      r.pages.push_back(r.owned.back());
    }
    r.hashes.push_back(job.hashes[i]);
    parent = job.hashes[i];
  }
  if (host_ != nullptr) host_->touch_chain(r.hashes);
  if (disk_ != nullptr) disk_->touch_chain(r.hashes);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto served = static_cast<int64_t>(r.pages.size());
    stats_.host_hits += r.from_host;
    stats_.disk_hits += served - r.from_host;
    stats_.host_misses += host_missed ? 1 : 0;
    stats_.disk_misses += disk_ != nullptr && r.pages.size() < job.hashes.size() ? 1 : 0;
    stats_.rejected_pages += rejected;
    stats_.bytes_read += read;
    stats_.host_bytes_read += host_read;
    ++stats_.restores;
    restored_.push_back(std::move(r));
  }
  wake_();
}

void KvOffloader::do_write(PendingWrite& w) {
  const std::span<const int32_t> prefix(w.tokens->data(), w.num_tokens);
  std::vector<BlockHash> evicted;
  const Status st = disk_->store(w.header, prefix, w.payload, evicted);
  std::lock_guard<std::mutex> lock(mu_);
  if (st.is_ok()) {
    stats_.bytes_written += static_cast<int64_t>(
        kv_page_prefix_bytes(static_cast<uint32_t>(w.num_tokens)) + w.payload.size());
    events_.push_back({true, w.header.hash, w.header.parent,
                       std::vector<int32_t>(prefix.end() - block_size_, prefix.end()), "DISK"});
  }
  for (const BlockHash& e : evicted) events_.push_back({false, e, {}, {}, "DISK"});
}

}  // namespace llmserve
