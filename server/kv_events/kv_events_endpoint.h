// Where the KV-event sockets go (DESIGN §12, "Trust boundaries"). The events carry the token ids
// of every cached prompt, so the PUB socket follows server.host unless told otherwise:
//   kv_events.endpoint ""  -> bind tcp://<kv_events.host, else server.host>:<kv_events.port>
//   kv_events.endpoint set -> vLLM's rule: bound when it holds "*" or "::" (or is ipc:// or
//                             inproc://), else connected to a subscriber that binds.
// The replay ROUTER socket is always bound at kv_events.replay_endpoint. A bound endpoint whose
// host is a wildcard (*, 0.0.0.0, ::) listens on every interface: every_interface says so, and
// the serve command warns.
#pragma once

#include <string>

namespace llmserve {

struct KvEventsEndpoint {
  std::string endpoint;          // the ZeroMQ endpoint, e.g. tcp://127.0.0.1:5557
  bool bind = true;              // false: connect (an explicit endpoint without a wildcard)
  bool ipv6 = false;             // the host is an IPv6 address: the socket needs ZMQ_IPV6
  bool every_interface = false;  // bound to a wildcard address
};

// The PUB socket's endpoint. `port` 0 binds a port the OS picks (tcp://host:*).
KvEventsEndpoint kv_events_pub_endpoint(const std::string& server_host, const std::string& host,
                                        int port, const std::string& endpoint);

// The replay ROUTER socket's endpoint (always bound); `endpoint` must not be empty.
KvEventsEndpoint kv_events_replay_endpoint(const std::string& endpoint);

}  // namespace llmserve
