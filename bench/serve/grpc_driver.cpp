#include "bench/serve/grpc_driver.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "llmserve/v1/generation.grpc.pb.h"

namespace llmserve::bench {

struct GrpcDriver::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<llmserve::v1::Generation::Stub> stub;
};

GrpcDriver::GrpcDriver(GrpcTarget target) : target_(std::move(target)), impl_(new Impl) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  impl_->channel =
      grpc::CreateCustomChannel(target_.host_port, grpc::InsecureChannelCredentials(), args);
  impl_->stub = llmserve::v1::Generation::NewStub(impl_->channel);
}

GrpcDriver::~GrpcDriver() = default;

RequestResult GrpcDriver::send(const BenchRequest& req) {
  using Clock = std::chrono::steady_clock;
  llmserve::v1::GenerateRequest greq;
  if (!target_.model.empty()) greq.set_model(target_.model);
  if (!req.prompt_token_ids.empty()) {
    greq.mutable_prompt_token_ids()->Add(req.prompt_token_ids.begin(), req.prompt_token_ids.end());
  } else {
    greq.set_prompt(req.prompt_text);
  }
  greq.set_max_tokens(req.max_tokens);
  greq.set_temperature(0.0f);
  greq.set_ignore_eos(req.ignore_eos);

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::duration<double>(target_.timeout_s)));
  if (!target_.api_key.empty()) ctx.AddMetadata("authorization", "Bearer " + target_.api_key);

  RequestResult r;
  r.prompt_tokens = req.prompt_len;
  const auto start = Clock::now();
  auto since_start = [start] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  auto reader = impl_->stub->Generate(&ctx, greq);
  llmserve::v1::GenerateResponse msg;
  int token_msgs = 0;
  int tokens_seen = 0;
  bool got_usage = false;
  double last_t = 0;
  while (reader->Read(&msg)) {
    const double t = since_start();
    if (msg.token_ids_size() > 0 || !msg.text().empty()) {
      if (token_msgs == 0) {
        r.ttft_s = t;
      } else {
        r.itl_s.push_back(t - last_t);
      }
      last_t = t;
      ++token_msgs;
      tokens_seen += msg.token_ids_size();
      r.generated_text += msg.text();
    }
    if (msg.has_usage()) {
      got_usage = true;
      if (msg.usage().prompt_tokens() > 0) r.prompt_tokens = msg.usage().prompt_tokens();
      r.output_tokens = msg.usage().completion_tokens();
    }
  }
  const grpc::Status st = reader->Finish();
  r.latency_s = since_start();
  if (!got_usage) r.output_tokens = tokens_seen > 0 ? tokens_seen : token_msgs;
  if (!st.ok()) {
    r.error =
        "gRPC " + std::to_string(static_cast<int>(st.error_code())) + ": " + st.error_message();
  } else if (token_msgs == 0) {
    r.error = "no message carried generated tokens";
  }
  r.success = r.error.empty();
  return r;
}

}  // namespace llmserve::bench
