// Counters and gauges the engine keeps for the front end to export (DESIGN §7 metrics).
// EngineStats is a plain snapshot; the histograms live in EngineMetrics.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/core/histogram.h"
#include "engine/generate_request.h"
#include "engine/kv_transfer/kv_transfer_stats.h"

namespace llmserve {

struct EngineStats {
  // gauges
  int64_t requests_running = 0;
  int64_t requests_waiting = 0;
  int64_t kv_blocks_total = 0;      // usable blocks (null block excluded)
  int64_t kv_blocks_free = 0;       // free or cached-evictable
  int64_t kv_capacity_tokens = 0;   // usable blocks x block_size
  uint64_t kv_bytes_per_token = 0;  // K + V of all layers, int8 / fp8 scales included
  double kv_cache_usage_ratio = 0;  // blocks held by requests / total
  int64_t waiting_prompt_tokens = 0;
  // counters
  uint64_t steps = 0;  // engine steps run (readiness watchdog)
  uint64_t prompt_tokens = 0;
  uint64_t pooling_requests = 0;  // pooling requests answered (embeddings, rerank, score)
  uint64_t generation_tokens = 0;
  uint64_t preemptions = 0;
  uint64_t prefix_cache_queries = 0;             // tokens looked up
  uint64_t prefix_cache_hits = 0;                // tokens found
  uint64_t kv_blocks_released_by_window = 0;     // blocks given back outside a sliding window
  int64_t kv_cache_cached_blocks = 0;            // blocks registered in the prefix cache
  uint64_t kv_event_batches = 0;                 // KV-event batches published (engine/kv_events)
  uint64_t kv_event_batches_dropped = 0;         // ... lost by readers that fell behind
  std::array<uint64_t, 6> finished_by_reason{};  // indexed by FinishReason
  // Speculative decoding: checks (a request with drafts in a step), drafts verified, drafts
  // accepted, and accepted drafts by position (index 0 = the first draft of a check).
  uint64_t spec_num_drafts = 0;
  uint64_t spec_num_draft_tokens = 0;
  uint64_t spec_num_accepted_tokens = 0;
  // Structured outputs (GrammarCompiler::stats).
  int64_t grammar_compiles = 0, grammar_cache_hits = 0, grammar_compile_errors = 0;
  // A vision tower (engine/vision/image_encoder.h): images run through it, images its cache
  // answered, the bytes that cache holds.
  uint64_t images_encoded = 0, image_cache_hits = 0, image_cache_bytes = 0;
  int64_t grammar_cache_entries = 0, grammar_cache_bytes = 0;
  int64_t grammar_compiles_abandoned = 0, grammar_compile_timeouts = 0;
  double grammar_compile_seconds = 0;
  std::vector<uint64_t> spec_accepted_per_position;  // [speculative.num_tokens]; empty when off
  int64_t spec_draft_blocks_held = 0;                // the draft model's own KV cache
  KvTransferStats kv_transfer;                       // disaggregated prefill/decode
  // Tiers below the page pool (engine/kv_offload); all 0 when kv_offload is off.
  bool kv_offload_enabled = false;
  int64_t kv_tier_disk_bytes = 0, kv_tier_disk_budget_bytes = 0, kv_tier_disk_pages = 0;
  uint64_t kv_tier_disk_hits = 0,
           kv_tier_disk_misses = 0;  // pages restored; lookups that found none
  uint64_t kv_tier_bytes_written = 0, kv_tier_bytes_read = 0;
  uint64_t kv_tier_pages_evicted = 0, kv_tier_pages_corrupt = 0, kv_tier_pages_foreign = 0;
  uint64_t kv_tier_pages_rejected = 0, kv_tier_pages_dropped = 0, kv_tier_pages_loaded = 0;
  uint64_t kv_tier_blocks_restored = 0;     // pages placed back into the pool
  uint64_t kv_tier_preempted_restores = 0;  // preempted requests resumed from a tier
  // The host-memory tier (kv_offload.host_bytes); kv_tier_host_budget_bytes 0 = off.
  int64_t kv_tier_host_bytes = 0, kv_tier_host_budget_bytes = 0, kv_tier_host_pages = 0;
  uint64_t kv_tier_host_hits = 0, kv_tier_host_misses = 0;
  uint64_t kv_tier_host_bytes_written = 0, kv_tier_host_bytes_read = 0;
  uint64_t kv_tier_host_pages_evicted = 0, kv_tier_host_pages_demoted = 0;
  bool kv_tier_disk_on = false;
  bool has_pending_work = false;
  int64_t last_step_age_ms = 0;  // since the last step finished (or since start)
};

// Histograms (seconds unless noted), observed on the engine thread.
struct EngineMetrics {
  Histogram time_to_first_token{Histogram::latency_buckets()};
  Histogram inter_token_latency{Histogram::latency_buckets()};
  Histogram e2e_request_latency{Histogram::latency_buckets()};
  Histogram request_queue_time{Histogram::latency_buckets()};
  Histogram request_prefill_time{Histogram::latency_buckets()};
  Histogram request_decode_time{Histogram::latency_buckets()};
  Histogram iteration_tokens{Histogram::token_count_buckets()};  // tokens per step
  Histogram kv_transfer_seconds{Histogram::latency_buckets()};   // one consumer pull, end to end
  Histogram kv_restore_seconds{Histogram::latency_buckets()};    // a request held for read-ahead
};

}  // namespace llmserve
