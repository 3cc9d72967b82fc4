#include "engine/kv_offload/kv_offloader.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "engine/kv_offload/kv_restore_check.h"

namespace llmserve {

KvOffloader::KvOffloader(const KvOffloadOptions& options, KvBlockIo io, KvFingerprint fingerprint,
                         uint32_t block_size, std::unique_ptr<KvDiskTier> disk,
                         std::function<void()> wake)
    : options_(options),
      io_(std::move(io)),
      fingerprint_(std::move(fingerprint)),
      block_size_(block_size),
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
}

bool KvOffloader::wants(const BlockHash& hash) {
  if (disk_->contains(hash)) return false;
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
  ++stats_.disk_misses;
}

std::vector<int32_t> KvOffloader::take_copied() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(copied_, {});
}

std::vector<KvRestoreResult> KvOffloader::take_restored() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(restored_, {});
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
  s.disk = disk_->stats();
  return s;
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
      std::deque<PendingWrite> copied;
      std::vector<int32_t> ids;
      for (KvStoreJob& j : jobs) {
        PendingWrite w{std::move(j), std::vector<std::byte>(io_.block_bytes())};
        io_.copy_out(w.job.block_id, w.payload);
        ids.push_back(w.job.block_id);
        copied.push_back(std::move(w));
      }
      lock.lock();
      copied_.insert(copied_.end(), ids.begin(), ids.end());
      for (PendingWrite& w : copied) writes_.push_back(std::move(w));
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

void KvOffloader::do_restore(KvRestoreJob& job) {
  const auto t0 = std::chrono::steady_clock::now();
  KvRestoreResult r;
  r.key = job.key;
  r.first_block = job.first_block;
  std::vector<std::byte> file;
  std::vector<int32_t> tokens;
  int64_t read = 0, rejected = 0;
  BlockHash parent = job.parent;
  for (size_t i = 0; i < job.hashes.size(); ++i) {
    auto page = disk_->read(job.hashes[i], file, tokens);
    if (!page.is_ok()) break;  // absent, or corrupt (deleted and counted)
    KvRestoreTarget want{fingerprint_.digest,
                         block_size_,
                         io_.block_bytes(),
                         job.hashes[i],
                         parent,
                         job.salt,
                         job.first_block + static_cast<int32_t>(i),
                         job.tokens};
    const std::string why = kv_restore_mismatch(*page, want);
    if (!why.empty()) {
      spdlog::info(
          "kv_offload: a disk page for block {} is not this request's ({} do not match); "
          "recomputing",
          want.block_index, why);
      ++rejected;
      break;
    }
    read += static_cast<int64_t>(file.size());
    r.payloads.emplace_back(page->payload.begin(), page->payload.end());
    r.hashes.push_back(job.hashes[i]);
    parent = job.hashes[i];
  }
  disk_->touch_chain(r.hashes);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.disk_hits += static_cast<int64_t>(r.payloads.size());
    stats_.disk_misses += r.payloads.size() < job.hashes.size() ? 1 : 0;
    stats_.rejected_pages += rejected;
    stats_.bytes_read += read;
    ++stats_.restores;
    restored_.push_back(std::move(r));
  }
  wake_();
}

void KvOffloader::do_write(PendingWrite& w) {
  const KvStoreJob& j = w.job;
  const auto n = static_cast<size_t>(j.block_index + 1) * block_size_;
  if (j.tokens == nullptr || j.tokens->size() < n) return;
  KvPageHeader h;
  h.block_size = block_size_;
  h.fingerprint = fingerprint_.digest;
  h.hash = j.hash;
  h.parent = j.parent;
  h.salt = j.salt;
  const std::span<const int32_t> prefix(j.tokens->data(), n);
  std::vector<BlockHash> evicted;
  const Status st = disk_->store(h, prefix, w.payload, evicted);
  std::lock_guard<std::mutex> lock(mu_);
  if (st.is_ok()) {
    stats_.bytes_written +=
        static_cast<int64_t>(kv_page_prefix_bytes(static_cast<uint32_t>(n)) + w.payload.size());
    events_.push_back(
        {true, j.hash, j.parent, std::vector<int32_t>(prefix.end() - block_size_, prefix.end())});
  }
  for (const BlockHash& e : evicted) events_.push_back({false, e, {}, {}});
}

}  // namespace llmserve
