#include "server/metrics/engine_collector.h"

#include <limits>
#include <string>
#include <utility>

namespace llmserve {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric counter_sample(double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  return m;
}

ClientMetric gauge_sample(double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

// Appends families in call order; the name literals here are the exported names.
class Families {
 public:
  MetricFamily& family(const char* name, const char* help, MetricType type) {
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }
  void gauge(const char* name, const char* help, double value) {
    ClientMetric m;
    m.gauge.value = value;
    family(name, help, MetricType::Gauge).metric.push_back(std::move(m));
  }
  void counter(const char* name, const char* help, double value) {
    family(name, help, MetricType::Counter).metric.push_back(counter_sample(value));
  }
  void histogram(const char* name, const char* help, const HistogramSnapshot& h) {
    out_.push_back(histogram_family(name, help, h));
  }
  std::vector<MetricFamily> take() { return std::move(out_); }

 private:
  std::vector<MetricFamily> out_;
};

double d(uint64_t v) {
  return static_cast<double>(v);
}
double d(int64_t v) {
  return static_cast<double>(v);
}

}  // namespace

MetricFamily histogram_family(const char* name, const char* help, const HistogramSnapshot& h) {
  ClientMetric m;
  m.histogram.sample_count = h.count;
  m.histogram.sample_sum = h.sum;
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.upper_bounds.size(); ++i) {
    cumulative += i < h.bucket_counts.size() ? h.bucket_counts[i] : 0;
    const double le =
        i < h.upper_bounds.size() ? h.upper_bounds[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back(ClientMetric::Bucket{cumulative, le});
  }
  return MetricFamily{name, help, MetricType::Histogram, {std::move(m)}};
}

std::vector<MetricFamily> collect_engine_metrics(const EngineStats& s, const EngineMetrics* m) {
  Families f;
  f.gauge("llmserve_requests_running", "Requests in the running batch.", d(s.requests_running));
  f.gauge("llmserve_requests_waiting", "Requests waiting to be scheduled.", d(s.requests_waiting));
  f.gauge("llmserve_kv_cache_usage_ratio", "KV-cache blocks held by requests / total blocks.",
          s.kv_cache_usage_ratio);
  f.gauge("llmserve_kv_cache_blocks_total", "Usable KV-cache blocks.", d(s.kv_blocks_total));
  f.gauge("llmserve_kv_cache_blocks_free", "Free or evictable KV-cache blocks.",
          d(s.kv_blocks_free));
  f.gauge("llmserve_kv_cache_capacity_tokens",
          "Tokens the usable KV-cache blocks hold (blocks x block size).", d(s.kv_capacity_tokens));
  f.gauge("llmserve_kv_cache_bytes_per_token",
          "KV-cache bytes one token takes over all layers (K and V, int8/fp8 scales included).",
          d(s.kv_bytes_per_token));
  f.counter("llmserve_prompt_tokens_total", "Prompt tokens processed.", d(s.prompt_tokens));
  f.counter("llmserve_pooling_requests_total",
            "Pooling requests answered (each input of /v1/embeddings, the Embed RPC).",
            d(s.pooling_requests));
  f.counter("llmserve_generation_tokens_total", "Tokens generated.", d(s.generation_tokens));
  MetricFamily& finished = f.family("llmserve_requests_finished_total",
                                    "Finished requests by finish reason.", MetricType::Counter);
  for (size_t r = 1; r < s.finished_by_reason.size(); ++r) {  // every reason but kNone
    finished.metric.push_back(
        counter_sample(d(s.finished_by_reason[r]),
                       {{"reason", finish_reason_name(static_cast<FinishReason>(r))}}));
  }
  f.counter("llmserve_preemptions_total", "Requests preempted for lack of KV-cache blocks.",
            d(s.preemptions));
  f.counter("llmserve_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
            d(s.prefix_cache_queries));
  f.counter("llmserve_prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
            d(s.prefix_cache_hits));
  f.counter("llmserve_kv_cache_window_released_blocks_total",
            "KV blocks given back while their request ran: wholly outside its sliding window.",
            d(s.kv_blocks_released_by_window));
  f.gauge("llmserve_prefix_cache_blocks",
          "KV-cache blocks registered in the prefix cache (held or evictable).",
          d(s.kv_cache_cached_blocks));
  f.counter("llmserve_kv_events_batches_total",
            "KV-event batches published (one per engine step that changed the prefix cache).",
            d(s.kv_event_batches));
  f.counter("llmserve_kv_events_dropped_batches_total",
            "KV-event batches a subscriber (ZMQ publisher, gRPC stream) lost because it fell "
            "more than kv_events.buffer_steps batches behind.",
            d(s.kv_event_batches_dropped));
  f.counter("llmserve_engine_steps_total", "Engine steps run.", d(s.steps));
  f.counter("llmserve_spec_decode_num_drafts_total",
            "Speculative checks: a request verifying drafts in a step.", d(s.spec_num_drafts));
  f.counter("llmserve_spec_decode_num_draft_tokens_total", "Draft tokens verified.",
            d(s.spec_num_draft_tokens));
  f.counter("llmserve_spec_decode_num_accepted_tokens_total", "Draft tokens accepted.",
            d(s.spec_num_accepted_tokens));
  MetricFamily& per_pos =
      f.family("llmserve_spec_decode_num_accepted_tokens_per_pos_total",
               "Draft tokens accepted by position in their check (0 = the first draft).",
               MetricType::Counter);
  for (size_t p = 0; p < s.spec_accepted_per_position.size(); ++p) {
    per_pos.metric.push_back(
        counter_sample(d(s.spec_accepted_per_position[p]), {{"position", std::to_string(p)}}));
  }
  // Speculation off: position 0 exists at 0 all the same, so a dashboard shows 0, not no data.
  if (per_pos.metric.empty()) per_pos.metric.push_back(counter_sample(0, {{"position", "0"}}));
  f.counter("llmserve_images_encoded_total",
            "Images run through the vision tower (a model with one); repeats the encoder cache "
            "answered are not counted.",
            d(s.images_encoded));
  f.counter("llmserve_image_cache_hits_total",
            "Images whose features the encoder cache (engine.image_cache_bytes) held.",
            d(s.image_cache_hits));
  f.gauge("llmserve_image_cache_bytes", "Bytes of image features the encoder cache holds.",
          d(s.image_cache_bytes));
  f.counter("llmserve_grammar_compiles_total",
            "Structured-output grammars compiled (cache misses), errors included.",
            d(s.grammar_compiles));
  f.counter("llmserve_grammar_cache_hits_total",
            "Structured-output requests whose grammar was compiled already (or in flight).",
            d(s.grammar_cache_hits));
  f.counter("llmserve_grammar_compile_errors_total",
            "Grammars that did not compile (each a 400 naming its field).",
            d(s.grammar_compile_errors));
  f.counter("llmserve_grammar_compile_seconds_total", "Time spent compiling grammars.",
            s.grammar_compile_seconds);
  f.gauge("llmserve_grammar_cache_entries", "Compiled grammars kept for reuse.",
          d(s.grammar_cache_entries));
  f.gauge("llmserve_grammar_cache_bytes", "Memory of the compiled grammars kept for reuse.",
          d(s.grammar_cache_bytes));
  f.counter("llmserve_grammar_compiles_abandoned_total",
            "Grammar compiles dropped from the queue or killed because no request waited for "
            "them any more.",
            d(s.grammar_compiles_abandoned));
  f.counter("llmserve_grammar_compile_timeouts_total",
            "Grammar compiles killed at engine.grammar_compile_timeout_seconds.",
            d(s.grammar_compile_timeouts));
  const KvTransferStats& kt = s.kv_transfer;
  f.counter("llmserve_kv_transfer_pulls_total",
            "Consumer pulls of a prefill's KV blocks that succeeded (kv_transfer).",
            d(kt.transfers));
  f.counter("llmserve_kv_transfer_bytes_total", "KV bytes pulled from producers.", d(kt.bytes));
  MetricFamily& fallbacks = f.family(
      "llmserve_kv_transfer_fallbacks_total",
      "Requests handed KV that prefilled locally instead, by reason.", MetricType::Counter);
  for (size_t r = 0; r < kt.fallbacks.size(); ++r) {
    fallbacks.metric.push_back(counter_sample(
        d(kt.fallbacks[r]), {{"reason", kv_fallback_name(static_cast<KvFallback>(r))}}));
  }
  f.counter("llmserve_kv_transfer_leases_total", "Producer: prefills kept pinned for a consumer.",
            d(kt.leases));
  f.counter("llmserve_kv_transfer_leases_expired_total",
            "Producer: leases no consumer released within kv_transfer.lease_seconds.",
            d(kt.leases_expired));
  f.counter("llmserve_kv_transfer_leases_refused_total",
            "Producer: prefills answered without a handoff because kv_transfer.max_pinned_blocks "
            "was spent (their consumers prefill locally).",
            d(kt.leases_refused));
  f.gauge("llmserve_kv_transfer_pinned_blocks", "Producer: KV blocks pinned for consumers now.",
          d(kt.pinned_blocks));
  if (s.kv_offload_enabled) {
    // One series per tier that is on: "host" (kv_offload.host_bytes), "disk".
    const bool host = s.kv_tier_host_budget_bytes > 0, disk = s.kv_tier_disk_on;
    auto tier_gauge = [&](const char* name, const char* help, int64_t host_v, int64_t disk_v) {
      MetricFamily& fam = f.family(name, help, MetricType::Gauge);
      if (host) fam.metric.push_back(gauge_sample(d(host_v), {{"tier", "host"}}));
      if (disk) fam.metric.push_back(gauge_sample(d(disk_v), {{"tier", "disk"}}));
    };
    auto tier_counter = [&](const char* name, const char* help, uint64_t host_v, uint64_t disk_v,
                            bool has_host = true) {
      MetricFamily& fam = f.family(name, help, MetricType::Counter);
      if (host && has_host) fam.metric.push_back(counter_sample(d(host_v), {{"tier", "host"}}));
      if (disk) fam.metric.push_back(counter_sample(d(disk_v), {{"tier", "disk"}}));
    };
    tier_gauge("llmserve_kv_tier_bytes", "Bytes of KV pages held per tier below the page pool.",
               s.kv_tier_host_bytes, s.kv_tier_disk_bytes);
    tier_gauge("llmserve_kv_tier_budget_bytes", "Byte budget per tier below the page pool.",
               s.kv_tier_host_budget_bytes, s.kv_tier_disk_budget_bytes);
    tier_gauge("llmserve_kv_tier_pages", "KV pages held per tier.", s.kv_tier_host_pages,
               s.kv_tier_disk_pages);
    tier_counter("llmserve_kv_tier_hits_total", "KV pages restored from a tier (checked).",
                 s.kv_tier_host_hits, s.kv_tier_disk_hits);
    tier_counter("llmserve_kv_tier_misses_total",
                 "Prefix lookups past the page pool that found no usable page on a tier.",
                 s.kv_tier_host_misses, s.kv_tier_disk_misses);
    tier_counter("llmserve_kv_tier_bytes_written_total", "Bytes written to a tier.",
                 s.kv_tier_host_bytes_written, s.kv_tier_bytes_written);
    tier_counter("llmserve_kv_tier_bytes_read_total", "Bytes read back from a tier.",
                 s.kv_tier_host_bytes_read, s.kv_tier_bytes_read);
    tier_counter("llmserve_kv_tier_evicted_pages_total",
                 "Pages evicted from a tier (LRU; the host tier's go to disk when it is on).",
                 s.kv_tier_host_pages_evicted, s.kv_tier_pages_evicted);
    if (host && disk) {
      f.counter("llmserve_kv_tier_demoted_pages_total",
                "Pages the host tier evicted that were written to the disk tier.",
                d(s.kv_tier_host_pages_demoted));
    }
    if (disk) {
      tier_counter("llmserve_kv_tier_corrupt_pages_total",
                   "Torn or corrupted pages found (deleted, never served; the prefix is "
                   "recomputed).",
                   0, s.kv_tier_pages_corrupt, false);
      tier_counter("llmserve_kv_tier_foreign_pages_total",
                   "Pages of another fingerprint (model, dtype, layout) skipped at load.", 0,
                   s.kv_tier_pages_foreign, false);
      tier_counter("llmserve_kv_tier_loaded_pages_total",
                   "Pages found on disk at start-up (from an earlier run) and indexed.", 0,
                   s.kv_tier_pages_loaded, false);
    }
    f.counter("llmserve_kv_tier_rejected_pages_total",
              "Candidate pages refused at restore: token ids, salt or hash chain differ.",
              d(s.kv_tier_pages_rejected));
    f.counter("llmserve_kv_tier_dropped_pages_total",
              "Pages not kept because the write queue was full.", d(s.kv_tier_pages_dropped));
    f.counter("llmserve_kv_tier_restored_blocks_total",
              "Pages placed back into the page pool from a lower tier.",
              d(s.kv_tier_blocks_restored));
    f.counter("llmserve_kv_tier_preempted_restores_total",
              "Preempted requests whose pages came back from a lower tier instead of being "
              "recomputed.",
              d(s.kv_tier_preempted_restores));
  }
  if (m != nullptr) {
    if (s.kv_offload_enabled) {
      f.histogram("llmserve_kv_tier_restore_seconds",
                  "A request held for read-ahead from a lower tier: hold to admission, seconds.",
                  m->kv_restore_seconds.snapshot());
    }
    f.histogram("llmserve_kv_transfer_seconds",
                "Consumer: one pull (handshake, reads, release), seconds.",
                m->kv_transfer_seconds.snapshot());
    f.histogram("llmserve_time_to_first_token_seconds", "Time to first token, seconds.",
                m->time_to_first_token.snapshot());
    f.histogram("llmserve_inter_token_latency_seconds", "Time between output tokens, seconds.",
                m->inter_token_latency.snapshot());
    f.histogram("llmserve_e2e_request_latency_seconds", "Arrival to finish, seconds.",
                m->e2e_request_latency.snapshot());
    f.histogram("llmserve_request_queue_time_seconds", "Time waiting before first scheduled.",
                m->request_queue_time.snapshot());
    f.histogram("llmserve_request_prefill_time_seconds", "Time in prefill, seconds.",
                m->request_prefill_time.snapshot());
    f.histogram("llmserve_request_decode_time_seconds", "Time in decode, seconds.",
                m->request_decode_time.snapshot());
    f.histogram("llmserve_iteration_tokens", "Tokens per engine step.",
                m->iteration_tokens.snapshot());
  }
  return f.take();
}

}  // namespace llmserve
