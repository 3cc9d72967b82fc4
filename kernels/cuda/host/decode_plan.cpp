#include "llmserve/kernels/cuda/decode_plan.h"

#include <algorithm>

namespace llmserve::kernels::cuda {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t round_up(int64_t a, int64_t m) {
  return ceil_div(a, m) * m;
}

bool valid(const DecodePlanConfig& c) {
  return c.block_size > 0 && c.num_kv_heads > 0 && c.num_sms > 0 && c.ctas_per_sm > 0 &&
         c.min_split > 0 && c.sliding_window >= 0;
}

// Keys planned for request b: seq_lens[b] - its first planned key.
int64_t planned(const int32_t* seq_lens, int b, const DecodePlanConfig& cfg) {
  return seq_lens[b] - decode_plan_first_key(seq_lens[b], cfg);
}

int64_t target_ctas(const DecodePlanConfig& c) {
  return int64_t{c.num_sms} * c.ctas_per_sm;
}

// A request of len > 0 keys at target split length c (a block multiple): floor(len / c) splits,
// at least one, of equal block-multiple length `chunk`, the last one shorter.
int64_t splits_for(int64_t len, int64_t c, int64_t bs, int64_t* chunk) {
  const int64_t n = std::max<int64_t>(1, len / c);
  const int64_t ch = round_up(ceil_div(len, n), bs);
  if (chunk != nullptr) *chunk = ch;
  return ceil_div(len, ch);
}

int64_t count_items(const int32_t* seq_lens, int B, int64_t c, const DecodePlanConfig& cfg) {
  int64_t n = 0;
  for (int b = 0; b < B; ++b) {
    if (seq_lens[b] > 0) n += splits_for(planned(seq_lens, b, cfg), c, cfg.block_size, nullptr);
  }
  return n;
}

}  // namespace

int32_t decode_plan_first_key(int32_t len, const DecodePlanConfig& cfg) {
  if (cfg.sliding_window <= 0 || cfg.block_size <= 0 || len <= cfg.sliding_window) return 0;
  const int32_t lo = len - cfg.sliding_window;  // the first key inside the window
  return lo - lo % cfg.block_size;
}

int decode_plan_capacity(int max_batch, const DecodePlanConfig& cfg) {
  if (!valid(cfg) || max_batch < 0) return 0;
  // floor(len_b / c) summed over requests is at most W / c <= target / num_kv_heads, and each
  // request adds at most one more (the max(1, .) of a short one).
  const int64_t extra = target_ctas(cfg) / cfg.num_kv_heads;
  return static_cast<int>(std::max<int64_t>(1, max_batch + extra));
}

bool plan_decode(const int32_t* seq_lens, int B, const DecodePlanConfig& cfg, int capacity,
                 DecodePlan& plan) {
  if (!valid(cfg) || B < 0 || capacity < 0 || (B > 0 && seq_lens == nullptr)) return false;
  int64_t total = 0, max_len = 0, active = 0;
  for (int b = 0; b < B; ++b) {
    if (seq_lens[b] < 0) return false;
    if (seq_lens[b] == 0) continue;
    ++active;
    const int64_t keys = planned(seq_lens, b, cfg);
    total += keys;
    max_len = std::max(max_len, keys);
  }
  if (active > capacity) return false;

  const int64_t bs = cfg.block_size;
  int64_t c = 0;
  if (active > 0) {
    // Spread all keys of all kv heads over target_ctas CTAs, then keep each split long enough.
    const int64_t fair = ceil_div(total * cfg.num_kv_heads, target_ctas(cfg));
    const int64_t one_split = round_up(max_len, bs);
    c = std::min(one_split, round_up(std::max<int64_t>(fair, cfg.min_split), bs));
    if (count_items(seq_lens, B, c, cfg) > capacity) {
      // Smallest block multiple that fits; one split each (count = active) always does.
      int64_t lo = c / bs + 1, hi = one_split / bs;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (count_items(seq_lens, B, mid * bs, cfg) <= capacity) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      c = lo * bs;
    }
  }

  plan.items.clear();
  plan.merge.assign(static_cast<size_t>(B), DecodeMergeInfo{-1, 0});
  int32_t slot = 0;
  for (int b = 0; b < B; ++b) {
    const int64_t len = seq_lens[b];
    if (len == 0) continue;
    const int64_t first = decode_plan_first_key(static_cast<int32_t>(len), cfg);
    int64_t chunk = 0;
    const int64_t n = splits_for(len - first, c, bs, &chunk);
    if (n == 1) {
      plan.items.push_back({b, static_cast<int32_t>(first), static_cast<int32_t>(len), -1});
      plan.merge[b] = {-1, 1};
      continue;
    }
    plan.merge[b] = {slot, static_cast<int32_t>(n)};
    for (int64_t j = 0; j < n; ++j) {
      plan.items.push_back({b, static_cast<int32_t>(first + j * chunk),
                            static_cast<int32_t>(std::min(len, first + (j + 1) * chunk)),
                            static_cast<int32_t>(slot + j)});
    }
    slot += static_cast<int32_t>(n);
  }
  // Longest items first so the last CTAs to start are short ones.
  std::sort(plan.items.begin(), plan.items.end(),
            [](const DecodeWorkItem& x, const DecodeWorkItem& y) {
              const int32_t lx = x.kv_end - x.kv_begin, ly = y.kv_end - y.kv_begin;
              if (lx != ly) return lx > ly;
              if (x.request != y.request) return x.request < y.request;
              return x.kv_begin < y.kv_begin;
            });
  plan.num_partials = slot;
  plan.split_len = static_cast<int32_t>(c);
  return true;
}

bool pack_decode_plan(const DecodePlan& plan, int capacity, int max_requests, int32_t* dst) {
  if (capacity < 0 || max_requests < 0 || dst == nullptr ||
      plan.items.size() > static_cast<size_t>(capacity) ||
      plan.merge.size() > static_cast<size_t>(max_requests)) {
    return false;
  }
  std::fill(dst, dst + decode_plan_ints(capacity, max_requests), 0);
  dst[0] = static_cast<int32_t>(plan.items.size());
  dst[1] = static_cast<int32_t>(plan.merge.size());
  dst[2] = capacity;
  dst[3] = max_requests;
  dst[4] = plan.num_partials;
  dst[5] = plan.split_len;
  int32_t* it = dst + decode_plan_items_offset();
  for (const DecodeWorkItem& w : plan.items) {
    *it++ = w.request;
    *it++ = w.kv_begin;
    *it++ = w.kv_end;
    *it++ = w.partial_slot;
  }
  int32_t* mg = dst + decode_plan_merge_offset(capacity);
  for (const DecodeMergeInfo& m : plan.merge) {
    *mg++ = m.first_slot;
    *mg++ = m.num_splits;
  }
  return true;
}

bool unpack_decode_plan(const int32_t* src, int64_t n, DecodePlan& plan) {
  if (src == nullptr || n < kDecodePlanHeaderInts) return false;
  const int32_t num_items = src[0], num_requests = src[1], capacity = src[2], max_requests = src[3];
  if (capacity < 0 || max_requests < 0 || num_items < 0 || num_items > capacity ||
      num_requests < 0 || num_requests > max_requests ||
      n < decode_plan_ints(capacity, max_requests)) {
    return false;
  }
  plan.num_partials = src[4];
  plan.split_len = src[5];
  plan.items.resize(static_cast<size_t>(num_items));
  const int32_t* it = src + decode_plan_items_offset();
  for (DecodeWorkItem& w : plan.items) {
    w = {it[0], it[1], it[2], it[3]};
    it += kDecodePlanItemInts;
  }
  plan.merge.resize(static_cast<size_t>(num_requests));
  const int32_t* mg = src + decode_plan_merge_offset(capacity);
  for (DecodeMergeInfo& m : plan.merge) {
    m = {mg[0], mg[1]};
    mg += kDecodePlanMergeInts;
  }
  return true;
}

}  // namespace llmserve::kernels::cuda
