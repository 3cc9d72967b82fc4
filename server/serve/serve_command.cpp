#include "server/serve/serve_command.h"

#include <pthread.h>
#include <csignal>

#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "config/config_cli.h"
#include "engine/engine.h"
#include "server/anthropic/anthropic_routes.h"
#include "server/common/default_sampling.h"
#include "server/common/heap_release.h"
#include "server/common/options_from_config.h"
#include "server/common/server_state.h"
#include "server/embeddings/embeddings_routes.h"
#include "server/embeddings/rerank_routes.h"
#include "server/grpc/grpc_server.h"
#include "server/http/chat_renderer.h"
#include "server/http/http_server.h"
#include "server/kv_events/zmq_kv_publisher.h"
#include "server/metrics/server_metrics.h"

namespace llmserve::cli {

namespace {

spdlog::level::level_enum spdlog_level(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// Blocks SIGTERM / SIGINT in this thread and every thread it starts later, so sigwait() in the
// main thread receives them.
sigset_t block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

VllmMetricsInfo vllm_metrics_info(const Config& c, const std::string& model_name) {
  VllmMetricsInfo info;
  info.model_name = model_name;
  info.block_size = c.engine.block_size;
  info.cache_dtype = c.engine.kv_cache_dtype == KvCacheDtype::kF16
                         ? "auto"
                         : std::string(to_string(c.engine.kv_cache_dtype));
  info.enable_prefix_caching = c.engine.enable_prefix_caching;
  info.gpu_memory_utilization = c.engine.gpu_memory_utilization;
  return info;
}

// The ZeroMQ publisher of the engine's KV events (null when kv_events.enabled is false).
Result<std::unique_ptr<ZmqKvPublisher>> start_kv_events(const Config& c, Engine& engine) {
  if (!c.kv_events.enabled || engine.kv_event_bus() == nullptr) {
    return std::unique_ptr<ZmqKvPublisher>();
  }
  const KvEventsSection& k = c.kv_events;
  ZmqKvPublisherOptions o;
  o.endpoint = kv_events_pub_endpoint(c.server.host, k.host, k.port, k.endpoint);
  if (!k.replay_endpoint.empty()) o.replay = kv_events_replay_endpoint(k.replay_endpoint);
  o.topic = k.topic;
  o.hwm = k.hwm;
  o.layout = k.layout == "array" ? KvEventLayout::kArray : KvEventLayout::kMap;
  for (const auto& [e, key] : {std::pair{&o.endpoint, "kv_events.endpoint"},
                               std::pair{&o.replay, "kv_events.replay_endpoint"}}) {
    if (e->every_interface) {
      spdlog::warn(
          "{} {} binds every interface: whoever reaches it reads the token ids of "
          "every cached prompt. Bind an interface only the routers reach "
          "(docs/SECURITY.md).",
          key, e->endpoint);
    }
  }
  LLMSERVE_ASSIGN_OR_RETURN(auto publisher, ZmqKvPublisher::start(*engine.kv_event_bus(), o));
  spdlog::info("KV events {} {} (topic '{}', replay {})", o.endpoint.bind ? "bound at" : "sent to",
               publisher->pub_endpoint(), o.topic,
               o.replay.endpoint.empty() ? "off" : publisher->replay_endpoint());
  return publisher;
}

int serve(const ConfigFlags& flags) {
  const sigset_t signals = block_shutdown_signals();
  configure_heap_for_serving();
  auto config = load_config(flags, current_environment());
  if (!config.is_ok()) {
    spdlog::error("{}", config.status().message());
    return 2;
  }
  spdlog::set_level(spdlog_level(config->logging.level));
  if (config->logging.format == LogFormat::kJson) {
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","msg":"%v"})");
  }
  spdlog::info("llmserve configuration:\n{}", describe(*config));
  auto engine_options = engine_options_from_config(*config);
  if (!engine_options.is_ok()) {
    spdlog::error("{}", engine_options.status().message());
    return 2;
  }
  ServerOptions server_options = server_options_from_config(*config);
  auto sampling = default_sampling_from_config(*config);
  if (!sampling.is_ok()) {
    spdlog::error("{}", sampling.status().message());
    return 2;
  }
  server_options.default_sampling = *sampling;

  spdlog::info("loading model {}", engine_options->model_path);
  auto engine = Engine::create(*engine_options);
  if (!engine.is_ok()) {
    spdlog::error("cannot start the engine: {}", engine.status().to_string());
    return 1;
  }
  std::unique_ptr<Engine> eng = std::move(engine).value();
  spdlog::info("model {} loaded (max_model_len {}, default sampling: {})", eng->model_name(),
               eng->max_model_len(), server_options.default_sampling.describe());

  ServerMetrics metrics;
  ServerState state(eng.get(), server_options);
  if (config->metrics.vllm_names)
    metrics.enable_vllm_names(vllm_metrics_info(*config, state.model_name()));
  ChatRenderer renderer = make_chat_renderer(
      *eng,
      reasoning_parser_from_name(config->server.reasoning_parser).value_or(ReasoningParser::kAuto));
  if (renderer) {
    spdlog::info("chat: tool format {}, reasoning parser {} (server.reasoning_parser: {})",
                 renderer.tool_format == ToolFormat::kHermes    ? "hermes"
                 : renderer.tool_format == ToolFormat::kGeneric ? "generic"
                                                                : "mistral",
                 reasoning_parser_name(renderer.reasoning), config->server.reasoning_parser);
  }
  state.set_reasoning_parser(renderer ? renderer.reasoning : ReasoningParser::kNone);
  HttpServer http(state, metrics, std::move(renderer));
  MessagesOptions messages_options;
  messages_options.strip_system_lines = config->server.anthropic_strip_system_lines;
  http.add_api(anthropic_api(std::move(messages_options)));
  http.add_api(embeddings_api());
  http.add_api(rerank_api());
  GrpcServer grpc(state, metrics);
  if (Status st = http.start(); !st.is_ok()) {
    spdlog::error("{}", st.message());
    eng->shutdown();
    return 1;
  }
  if (Status st = grpc.start(); !st.is_ok()) {
    spdlog::error("{}", st.message());
    http.stop();
    eng->shutdown();
    return 1;
  }
  const char* scheme = server_options.tls_enabled() ? "https" : "http";
  spdlog::info("HTTP listening on {}://{}:{}", scheme, server_options.host, http.port());
  spdlog::info("gRPC listening on {}:{}", server_options.host, grpc.port());
  auto kv_publisher = start_kv_events(*config, *eng);
  if (!kv_publisher.is_ok()) {
    spdlog::error("{}", kv_publisher.status().message());
    grpc.stop(1.0);
    http.stop();
    eng->shutdown();
    return 1;
  }

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {} received: draining (grace {} s)", sig,
               server_options.shutdown_grace_seconds);
  state.start_draining();
  eng->stop_accepting();
  grpc.set_serving(false);
  const auto grace_end = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(server_options.shutdown_grace_seconds));
  while (state.in_flight() > 0 && std::chrono::steady_clock::now() < grace_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (state.in_flight() > 0) {
    spdlog::warn("grace period over with {} requests in flight; aborting them", state.in_flight());
  }
  eng->shutdown();  // aborts what is left; their streams end
  kv_publisher->reset();
  grpc.stop(1.0);
  http.stop();
  spdlog::info("llmserve stopped");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& root, int& exit_code) {
  CLI::App* cmd = root.add_subcommand(
      "serve", "Serve a model over OpenAI-compatible HTTP and gRPC until SIGTERM / SIGINT");
  auto flags = std::make_shared<ConfigFlags>();
  add_config_options(*cmd, *flags);
  cmd->callback([flags, &exit_code] { exit_code = serve(*flags); });
}

}  // namespace llmserve::cli
