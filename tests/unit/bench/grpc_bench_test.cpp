// The gRPC driver against an in-process fake llmserve.v1.Generation service.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "bench/serve/grpc_driver.h"
#include "bench/serve/serving_benchmark.h"
#include "llmserve/v1/generation.grpc.pb.h"

namespace llmserve::bench {
namespace {

class FakeGeneration final : public llmserve::v1::Generation::Service {
 public:
  grpc::Status Generate(grpc::ServerContext* ctx, const llmserve::v1::GenerateRequest* req,
                        grpc::ServerWriter<llmserve::v1::GenerateResponse>* out) override {
    const auto md = ctx->client_metadata().find("authorization");
    if (md == ctx->client_metadata().end() || md->second != "Bearer k") {
      return {grpc::StatusCode::UNAUTHENTICATED, "missing key"};
    }
    ++seen;
    last_prompt_len = req->prompt_token_ids_size();
    last_ignore_eos = req->ignore_eos();
    const int n = req->max_tokens();
    for (int i = 0; i < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(i == 0 ? 30 : 5));
      llmserve::v1::GenerateResponse msg;
      msg.add_token_ids(100 + i);
      msg.set_text("x");
      if (i + 1 == n) {
        msg.set_finish_reason("length");
        msg.mutable_usage()->set_prompt_tokens(req->prompt_token_ids_size());
        msg.mutable_usage()->set_completion_tokens(n);
      }
      out->Write(msg);
    }
    return grpc::Status::OK;
  }
  std::atomic<int> seen{0};
  std::atomic<int> last_prompt_len{0};
  std::atomic<bool> last_ignore_eos{false};
};

class GrpcBench : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }
  std::string addr() const { return "127.0.0.1:" + std::to_string(port_); }

  FakeGeneration service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(GrpcBench, EndToEnd) {
  BenchConfig c;
  c.grpc = addr();
  c.api_key = "k";
  c.num_requests = 6;
  c.max_concurrency = 3;
  c.input_len = 12;
  c.output_len = 4;
  c.warmup = 1;
  c.progress = false;
  std::ostringstream table;
  auto s = run_serving_benchmark(c, table);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(service_.seen, 7);
  EXPECT_EQ(service_.last_prompt_len, 12);
  EXPECT_TRUE(service_.last_ignore_eos);
  EXPECT_EQ(s->completed, 6);
  EXPECT_EQ(s->failed, 0) << (s->errors.empty() ? "" : s->errors[0]);
  EXPECT_EQ(s->total_output_tokens, 24);
  EXPECT_EQ(s->total_input_tokens, 72);
  EXPECT_GE(s->ttft_ms.median, 30.0);
  EXPECT_GE(s->e2el_ms.median, 45.0);
  EXPECT_GT(s->itl_ms.mean, 0.0);
  EXPECT_NE(table.str().find("grpc"), std::string::npos);
}

TEST_F(GrpcBench, StatusErrorsAreFailures) {
  GrpcDriver d(GrpcTarget{addr(), "wrong", "", 5});
  BenchRequest r;
  r.prompt_token_ids = {1, 2, 3};
  r.prompt_len = 3;
  r.max_tokens = 2;
  const RequestResult res = d.send(r);
  EXPECT_FALSE(res.success);
  EXPECT_NE(res.error.find("missing key"), std::string::npos) << res.error;
}

}  // namespace
}  // namespace llmserve::bench
