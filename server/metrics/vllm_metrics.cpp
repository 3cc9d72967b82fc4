#include "server/metrics/vllm_metrics.h"

#include <algorithm>
#include <string>
#include <utility>

#include "server/metrics/engine_collector.h"

namespace llmserve {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

class VllmFamilies {
 public:
  explicit VllmFamilies(const std::string& model) : base_{{"engine", "0"}, {"model_name", model}} {}

  // The base labels and `extra`, in name order (as every family on the page writes them).
  Labels labels(Labels extra = {}) const {
    Labels all = base_;
    all.insert(all.end(), extra.begin(), extra.end());
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return all;
  }
  MetricFamily& family(const char* name, const char* help, MetricType type) {
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }
  void gauge(const char* name, const char* help, double value, Labels extra = {}) {
    ClientMetric m;
    m.label = labels(std::move(extra));
    m.gauge.value = value;
    family(name, help, MetricType::Gauge).metric.push_back(std::move(m));
  }
  void counter(const char* name, const char* help, double value) {
    family(name, help, MetricType::Counter).metric.push_back(counter_sample(value, labels()));
  }
  void histogram(const char* name, const char* help, const HistogramSnapshot& h) {
    MetricFamily f = histogram_family(name, help, h);
    for (ClientMetric& m : f.metric) m.label = labels();
    out_.push_back(std::move(f));
  }
  static ClientMetric counter_sample(double value, Labels l) {
    ClientMetric m;
    m.label = std::move(l);
    m.counter.value = value;
    return m;
  }
  std::vector<MetricFamily> take() { return std::move(out_); }

 private:
  Labels base_;
  std::vector<MetricFamily> out_;
};

double d(uint64_t v) {
  return static_cast<double>(v);
}
double d(int64_t v) {
  return static_cast<double>(v);
}

std::string number_label(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::vector<MetricFamily> collect_vllm_metrics(const EngineStats& s, const EngineMetrics* m,
                                               const VllmMetricsInfo& info, double unix_time) {
  VllmFamilies f(info.model_name);
  f.gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
          d(s.requests_running));
  f.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
          d(s.requests_waiting));
  f.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
          s.kv_cache_usage_ratio);
  f.gauge("vllm:gpu_cache_usage_perc",
          "KV-cache usage. 1 means 100 percent usage (the older name of vllm:kv_cache_usage_perc).",
          s.kv_cache_usage_ratio);
  f.counter("vllm:prefix_cache_queries_total",
            "Prefix cache queries, in terms of number of queried tokens.",
            d(s.prefix_cache_queries));
  f.counter("vllm:prefix_cache_hits_total",
            "Prefix cache hits, in terms of number of cached tokens.", d(s.prefix_cache_hits));
  f.gauge("vllm:gpu_prefix_cache_hit_rate", "Prefix cache hit rate: hits / queries, tokens.",
          s.prefix_cache_queries == 0 ? 0.0 : d(s.prefix_cache_hits) / d(s.prefix_cache_queries));
  f.counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.",
            d(s.preemptions));
  f.counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", d(s.prompt_tokens));
  f.counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
            d(s.generation_tokens));
  MetricFamily& success =
      f.family("vllm:request_success_total", "Count of successfully processed requests.",
               MetricType::Counter);
  // vLLM's finished_reason values: stop, length, abort (error and timeout have no vLLM name).
  const std::pair<FinishReason, const char*> reasons[] = {{FinishReason::kStop, "stop"},
                                                          {FinishReason::kLength, "length"},
                                                          {FinishReason::kAbort, "abort"}};
  for (const auto& [reason, name] : reasons) {
    success.metric.push_back(
        VllmFamilies::counter_sample(d(s.finished_by_reason[static_cast<size_t>(reason)]),
                                     f.labels({{"finished_reason", name}})));
  }
  f.gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig.", 1.0,
          {{"block_size", std::to_string(info.block_size)},
           {"cache_dtype", info.cache_dtype},
           {"enable_prefix_caching", info.enable_prefix_caching ? "True" : "False"},
           {"gpu_memory_utilization", number_label(info.gpu_memory_utilization)},
           {"num_cpu_blocks", "0"},
           {"num_gpu_blocks", std::to_string(s.kv_blocks_total)}});
  f.gauge("vllm:lora_requests_info", "Running stats on LoRA requests.", unix_time,
          {{"max_lora", "0"}, {"running_lora_adapters", ""}, {"waiting_lora_adapters", ""}});
  f.counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.",
            d(s.spec_num_drafts));
  f.counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.",
            d(s.spec_num_draft_tokens));
  f.counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.",
            d(s.spec_num_accepted_tokens));
  if (m != nullptr) {
    f.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                m->time_to_first_token.snapshot());
    f.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                m->inter_token_latency.snapshot());
    f.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                m->e2e_request_latency.snapshot());
    f.histogram("vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.",
                m->request_queue_time.snapshot());
    f.histogram("vllm:request_prefill_time_seconds",
                "Histogram of time spent in PREFILL phase for request.",
                m->request_prefill_time.snapshot());
    f.histogram("vllm:request_decode_time_seconds",
                "Histogram of time spent in DECODE phase for request.",
                m->request_decode_time.snapshot());
    f.histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
                m->iteration_tokens.snapshot());
  }
  return f.take();
}

}  // namespace llmserve
