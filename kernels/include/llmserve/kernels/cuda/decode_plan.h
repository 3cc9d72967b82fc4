// Host-side plan of paged decode attention (FlashInfer's plan/run split): which (request, KV
// range) work items exist this step, and how the split requests' partial results are merged.
// Plain C++ (no CUDA headers): computed on the host in O(batch) per step and uploaded as one flat
// int32 array that the kernels (decode_attention.h), graph-captured or not, read on the device.
#pragma once

#include <cstdint>
#include <vector>

namespace llmserve::kernels::cuda {

struct DecodePlanConfig {
  int block_size = 16;   // tokens per KV page; every split but a request's last is a multiple
  int num_kv_heads = 0;  // one CTA per (work item, kv head)
  int num_sms = 0;       // streaming multiprocessors of the device
  int ctas_per_sm = 4;   // resident CTAs per SM the kernel reaches (decode_attention_ctas_per_sm)
  int min_split = 128;   // fewest keys in a split (rounded up to block_size)
  // > 0: sliding window. A request of len keys is planned over [first, len) only, first the
  // start of the block holding key len - sliding_window: splits wholly below the window would
  // launch CTAs with nothing to do.
  int sliding_window = 0;
};

// The first key plan_decode plans for a request of len keys (0 without a window).
int32_t decode_plan_first_key(int32_t len, const DecodePlanConfig& cfg);

// Keys [kv_begin, kv_end) of request `request`, all kv heads. partial_slot -1: the request has
// this one item and it writes the output row; else the workspace slot of this partial result.
struct DecodeWorkItem {
  int32_t request = 0, kv_begin = 0, kv_end = 0, partial_slot = -1;
};

// A request's partials sit in slots [first_slot, first_slot + num_splits) in key order.
// num_splits 0: padding row (seq_len 0), output zeros; 1: no merge (the item wrote out).
struct DecodeMergeInfo {
  int32_t first_slot = 0, num_splits = 0;
};

struct DecodePlan {
  std::vector<DecodeWorkItem> items;   // longest first
  std::vector<DecodeMergeInfo> merge;  // [num_requests]
  int32_t num_partials = 0;            // slots in use, <= items.size()
  int32_t split_len = 0;               // target keys per split this step (a block multiple)
};

// Most work items plan_decode makes for up to max_batch requests of any lengths: capacity that
// never constrains the split choice. A captured graph sizes its grid by it (per batch bucket).
int decode_plan_capacity(int max_batch, const DecodePlanConfig& cfg);

// Plans B requests with seq_lens[b] cached tokens each (the new one included; 0 = padding), each
// over keys [decode_plan_first_key(seq_lens[b]), seq_lens[b]).
// Splits are sized so that all requests together give about num_sms x ctas_per_sm CTAs (one
// split per request once the batch fills that), each at least min_split keys, at most capacity
// items in all. False (plan untouched) when a length is negative, the config is invalid, or
// capacity is below the number of non-empty requests. Reuses plan's storage.
bool plan_decode(const int32_t* seq_lens, int B, const DecodePlanConfig& cfg, int capacity,
                 DecodePlan& plan);

// The packed layout, int32: a header {num_items, num_requests, capacity, max_requests,
// num_partials, split_len, 0, 0}, then `capacity` items of {request, kv_begin, kv_end,
// partial_slot}, then `max_requests` merge rows of {first_slot, num_splits}; unused rows are zero.
inline constexpr int kDecodePlanHeaderInts = 8;
inline constexpr int kDecodePlanItemInts = 4;
inline constexpr int kDecodePlanMergeInts = 2;
inline constexpr int64_t decode_plan_items_offset() {
  return kDecodePlanHeaderInts;
}
inline constexpr int64_t decode_plan_merge_offset(int capacity) {
  return kDecodePlanHeaderInts + int64_t{kDecodePlanItemInts} * capacity;
}
inline constexpr int64_t decode_plan_ints(int capacity, int max_requests) {
  return decode_plan_merge_offset(capacity) + int64_t{kDecodePlanMergeInts} * max_requests;
}

// Writes plan into dst[decode_plan_ints(capacity, max_requests)]. False when the plan has more
// items than capacity or more requests than max_requests.
bool pack_decode_plan(const DecodePlan& plan, int capacity, int max_requests, int32_t* dst);

// Reads a packed plan of n ints back (tests, debugging). False when the header does not fit n.
bool unpack_decode_plan(const int32_t* src, int64_t n, DecodePlan& plan);

// Floats of workspace for `capacity` partial slots: o [capacity, num_heads, head_dim] then
// (max, sum) [capacity, num_heads, 2]. Independent of any context length.
inline constexpr int64_t decode_workspace_floats(int capacity, int num_heads, int head_dim) {
  return int64_t{capacity} * num_heads * (head_dim + 2);
}

}  // namespace llmserve::kernels::cuda
