#include "server/kv_events/kv_events_endpoint.h"

namespace llmserve {

namespace {

// The host part of tcp://HOST:PORT (brackets kept); "" for other transports.
std::string tcp_host(const std::string& endpoint) {
  constexpr std::string_view kTcp = "tcp://";
  if (!endpoint.starts_with(kTcp)) return "";
  const std::string rest = endpoint.substr(kTcp.size());
  const size_t colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

bool is_wildcard(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "*" || host == "0.0.0.0" || host == "::" || host == "0:0:0:0:0:0:0:0";
}

// Bind-side facts of an endpoint (tcp host wildcards, IPv6 literals).
KvEventsEndpoint describe(std::string endpoint, bool bind) {
  KvEventsEndpoint e;
  const std::string host = tcp_host(endpoint);
  e.ipv6 = host.find(':') != std::string::npos;
  e.every_interface = bind && endpoint.starts_with("tcp://") && is_wildcard(host);
  e.bind = bind;
  e.endpoint = std::move(endpoint);
  return e;
}

}  // namespace

KvEventsEndpoint kv_events_pub_endpoint(const std::string& server_host, const std::string& host,
                                        int port, const std::string& endpoint) {
  if (!endpoint.empty()) {
    // vLLM's rule (vllm/distributed/kv_events.py): bind "stable" endpoints, connect the others.
    const bool bind = endpoint.find('*') != std::string::npos ||
                      endpoint.find("::") != std::string::npos || endpoint.starts_with("ipc://") ||
                      endpoint.starts_with("inproc://");
    return describe(endpoint, bind);
  }
  std::string h = host.empty() ? server_host : host;
  if (h.find(':') != std::string::npos && !h.starts_with("[")) h = "[" + h + "]";
  return describe("tcp://" + h + ":" + (port == 0 ? std::string("*") : std::to_string(port)),
                  /*bind=*/true);
}

KvEventsEndpoint kv_events_replay_endpoint(const std::string& endpoint) {
  return describe(endpoint, /*bind=*/true);
}

}  // namespace llmserve
