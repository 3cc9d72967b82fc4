// Sends benchmark requests over the gRPC stream llmserve.v1.Generation/Generate. One channel
// (one HTTP/2 connection) per driver; the driver is safe to call from many threads at once.
#pragma once

#include <memory>
#include <string>

#include "bench/serve/request_result.h"
#include "bench/serve/workload.h"

namespace llmserve::bench {

struct GrpcTarget {
  std::string host_port;  // "127.0.0.1:50051"
  std::string api_key;    // sent as metadata "authorization: Bearer ..." when non-empty
  std::string model;
  double timeout_s = 600;  // per-request deadline
};

class GrpcDriver {
 public:
  explicit GrpcDriver(GrpcTarget target);
  ~GrpcDriver();
  GrpcDriver(const GrpcDriver&) = delete;
  GrpcDriver& operator=(const GrpcDriver&) = delete;

  // Blocks until the stream ends. TTFT at the first message carrying token ids or text.
  RequestResult send(const BenchRequest& req);

 private:
  struct Impl;
  GrpcTarget target_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmserve::bench
