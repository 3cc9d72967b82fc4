// vllm.grpc.engine.VllmEngine in process on a free port, driven by its generated C++ stub,
// against FakeEngine: streamed and whole Generate, Abort by id, the client's cancel, errors,
// the info calls, GetTokenizer of a model folder and the KV-event stream.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "engine/kv_events/kv_event_bus.h"
#include "server/grpc/grpc_server.h"
#include "server/grpc/tokenizer_bundle.h"
#include "server/grpc/vllm_info.h"
#include "tests/unit/server/fake_engine.h"
#include "vllm/grpc/engine/vllm_engine.grpc.pb.h"

namespace llmserve {
namespace {

namespace vpb = ::vllm::grpc::engine;
namespace cpb = ::smg::grpc::common;
using testing::FakeEngine;
using testing::FakeScript;

// FakeEngine with a KV-event bus and a settable model path.
class BusEngine : public FakeEngine {
 public:
  KvEventBus* kv_event_bus() override { return &bus; }
  const EngineOptions& options() const override { return opts; }
  KvEventBus bus{16};
  EngineOptions opts;
};

// The stored entries of a zip, read from its local file headers: name -> bytes.
std::map<std::string, std::string> stored_entries(const std::string& zip) {
  std::map<std::string, std::string> out;
  auto u16 = [&](size_t at) {
    return static_cast<size_t>(static_cast<unsigned char>(zip[at])) |
           static_cast<size_t>(static_cast<unsigned char>(zip[at + 1])) << 8;
  };
  auto u32 = [&](size_t at) { return u16(at) | u16(at + 2) << 16; };
  size_t at = 0;
  while (at + 30 <= zip.size() && u32(at) == 0x04034b50) {
    const size_t size = u32(at + 18), name_len = u16(at + 26), extra = u16(at + 28);
    const std::string name = zip.substr(at + 30, name_len);
    out[name] = zip.substr(at + 30 + name_len + extra, size);
    at += 30 + name_len + extra + size;
  }
  return out;
}

class VllmEngineServiceTest : public ::testing::Test {
 protected:
  void start(ServerOptions o = {}) {
    o.host = "127.0.0.1";
    o.grpc_port = 0;
    state_ = std::make_unique<ServerState>(&engine_, o);
    server_ = std::make_unique<GrpcServer>(*state_, metrics_);
    ASSERT_TRUE(server_->start().is_ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = vpb::VllmEngine::NewStub(channel_);
  }
  void TearDown() override {
    if (server_) server_->stop(0);
    engine_.shutdown();
  }
  void long_script() {
    FakeScript s;
    s.pieces.assign(2000, "t");
    s.step_delay = std::chrono::milliseconds(5);
    engine_.set_script(s);
  }
  static vpb::GenerateRequest request(const std::string& id, bool stream) {
    vpb::GenerateRequest r;
    r.set_request_id(id);
    for (uint32_t t : {5u, 6u, 7u}) r.mutable_tokenized()->add_input_ids(t);
    r.mutable_sampling_params()->set_max_tokens(16);
    r.set_stream(stream);
    return r;
  }
  // Every message of a Generate call, and its status.
  std::pair<std::vector<vpb::GenerateResponse>, grpc::Status> generate(
      const vpb::GenerateRequest& r) {
    grpc::ClientContext ctx;
    auto reader = stub_->Generate(&ctx, r);
    std::vector<vpb::GenerateResponse> out;
    vpb::GenerateResponse m;
    while (reader->Read(&m)) out.push_back(m);
    return {out, reader->Finish()};
  }

  BusEngine engine_;
  ServerMetrics metrics_;
  std::unique_ptr<ServerState> state_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<vpb::VllmEngine::Stub> stub_;
};

TEST_F(VllmEngineServiceTest, StreamedGenerateSendsDeltasThenOneComplete) {
  start();
  auto [msgs, status] = generate(request("s-1", true));
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(msgs.size(), 3u);
  ASSERT_TRUE(msgs[0].has_chunk());
  EXPECT_EQ(
      std::vector<uint32_t>(msgs[0].chunk().token_ids().begin(), msgs[0].chunk().token_ids().end()),
      std::vector<uint32_t>{'h'});
  EXPECT_EQ(msgs[0].chunk().prompt_tokens(), 3u);
  EXPECT_EQ(msgs[0].chunk().completion_tokens(), 1u);
  ASSERT_TRUE(msgs[1].has_chunk());
  EXPECT_EQ(msgs[1].chunk().token_ids(0), static_cast<uint32_t>(' '));
  ASSERT_TRUE(msgs[2].has_complete());
  const vpb::GenerateComplete& c = msgs[2].complete();
  EXPECT_EQ(c.finish_reason(), "stop");
  EXPECT_EQ(c.completion_tokens(), 2u);
  EXPECT_EQ(c.prompt_tokens(), 3u);
  EXPECT_EQ(c.output_ids_size(), 0);  // streamed: the chunks carried the tokens
  // The engine got the prompt's ids and the gateway's id.
  const auto sent = engine_.submitted();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].prompt_token_ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(sent[0].external_id, "s-1");
}

TEST_F(VllmEngineServiceTest, WholeGenerateSendsOneCompletePerChoiceWithLogprobs) {
  start();
  vpb::GenerateRequest r = request("w-1", false);
  r.mutable_sampling_params()->set_n(2);
  r.mutable_sampling_params()->set_logprobs(2);
  r.mutable_sampling_params()->set_max_tokens(1);
  auto [msgs, status] = generate(r);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(msgs.size(), 2u);
  std::set<uint32_t> indexes;
  for (const auto& m : msgs) {
    ASSERT_TRUE(m.has_complete());
    const vpb::GenerateComplete& c = m.complete();
    indexes.insert(c.index());
    EXPECT_EQ(c.finish_reason(), "length");
    ASSERT_EQ(c.output_ids_size(), 1);
    EXPECT_EQ(c.output_ids(0), static_cast<uint32_t>('h'));
    EXPECT_EQ(c.completion_tokens(), 1u);
    ASSERT_EQ(c.output_logprobs().token_ids_size(), 1);
    EXPECT_FLOAT_EQ(c.output_logprobs().token_logprobs(0), -0.5f);
    ASSERT_EQ(c.output_logprobs().top_logprobs_size(), 1);
    EXPECT_EQ(c.output_logprobs().top_logprobs(0).token_ids_size(), 2);
  }
  EXPECT_EQ(indexes, (std::set<uint32_t>{0, 1}));
}

TEST_F(VllmEngineServiceTest, AbortByIdEndsTheRunningRequest) {
  long_script();
  start();
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, request("to-abort", true));
  vpb::GenerateResponse m;
  ASSERT_TRUE(reader->Read(&m));  // running
  grpc::ClientContext actx;
  vpb::AbortRequest abort;
  abort.add_request_ids("to-abort");
  abort.add_request_ids("unknown-id");  // not an error
  vpb::AbortResponse aresp;
  ASSERT_TRUE(stub_->Abort(&actx, abort, &aresp).ok());
  std::string last_finish;
  while (reader->Read(&m)) {
    if (m.has_complete()) last_finish = m.complete().finish_reason();
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(last_finish, "abort");
  EXPECT_FALSE(engine_.aborted().empty());
  EXPECT_TRUE(engine_.wait_until_idle(std::chrono::seconds(5)));
}

TEST_F(VllmEngineServiceTest, ClientCancelAbortsTheEngineRequest) {
  long_script();
  start();
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, request("dropped", true));
  vpb::GenerateResponse m;
  ASSERT_TRUE(reader->Read(&m));
  ctx.TryCancel();
  while (reader->Read(&m)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(engine_.wait_until_idle(std::chrono::seconds(5)));
  EXPECT_FALSE(engine_.aborted().empty());
}

TEST_F(VllmEngineServiceTest, BadRequestsAreInvalidArgumentNamingTheField) {
  start();
  vpb::GenerateRequest r = request("bad", false);
  r.mutable_mm_inputs();
  auto [msgs, status] = generate(r);
  EXPECT_TRUE(msgs.empty());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("mm_inputs: ", 0), 0u) << status.error_message();
  r = request("bad2", false);
  r.mutable_tokenized()->add_input_ids(FakeEngine().tokenizer().vocab_size());
  std::tie(msgs, status) = generate(r);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("tokenized.input_ids: ", 0), 0u);
  EXPECT_TRUE(engine_.submitted().empty());
  // Bytes that are no GetModelInfoRequest: INVALID_ARGUMENT, not UNIMPLEMENTED.
  grpc::GenericStub generic(channel_);
  grpc::Slice slice(std::string("\xff\xff\xff", 3));
  grpc::ByteBuffer req(&slice, 1), resp;
  grpc::ClientContext gctx;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status raw;
  generic.UnaryCall(&gctx, "/vllm.grpc.engine.VllmEngine/GetModelInfo", grpc::StubOptions(), &req,
                    &resp, [&](grpc::Status st) {
                      std::lock_guard lock(mu);
                      raw = st;
                      done = true;
                      cv.notify_all();
                    });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
  EXPECT_EQ(raw.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(VllmEngineServiceTest, InfoCallsDescribeTheEngine) {
  EngineStats s;
  s.requests_running = 3;
  s.requests_waiting = 2;
  s.kv_cache_usage_ratio = 0.5;
  s.kv_blocks_total = 100;
  s.kv_blocks_free = 50;
  s.kv_capacity_tokens = 1600;
  engine_.set_stats_override(s);
  start();
  {
    grpc::ClientContext ctx;
    vpb::HealthCheckResponse h;
    ASSERT_TRUE(stub_->HealthCheck(&ctx, vpb::HealthCheckRequest(), &h).ok());
    EXPECT_TRUE(h.healthy()) << h.message();
  }
  {
    grpc::ClientContext ctx;
    vpb::GetModelInfoResponse m;
    ASSERT_TRUE(stub_->GetModelInfo(&ctx, vpb::GetModelInfoRequest(), &m).ok());
    EXPECT_EQ(m.served_model_name(), "fake-model");
    EXPECT_EQ(m.max_context_length(), 256u);
    EXPECT_EQ(m.vocab_size(), 300u);
    EXPECT_TRUE(m.is_generation());
  }
  {
    grpc::ClientContext ctx;
    vpb::GetServerInfoResponse m;
    ASSERT_TRUE(stub_->GetServerInfo(&ctx, vpb::GetServerInfoRequest(), &m).ok());
    EXPECT_EQ(m.pairing_protocol(), kLlmservePairingProtocol);
    EXPECT_EQ(m.max_num_seqs(), engine_.options().max_num_seqs);
    EXPECT_EQ(m.block_size(), engine_.options().block_size);
    EXPECT_EQ(m.kv_connector(), "");
  }
  {
    grpc::ClientContext ctx;
    vpb::GetLoadsResponse m;
    ASSERT_TRUE(stub_->GetLoads(&ctx, vpb::GetLoadsRequest(), &m).ok());
    ASSERT_EQ(m.loads_size(), 1);
    EXPECT_EQ(m.loads(0).num_running_reqs(), 3);
    EXPECT_EQ(m.loads(0).num_waiting_reqs(), 2);
    EXPECT_EQ(m.loads(0).num_total_reqs(), 5);
    EXPECT_DOUBLE_EQ(m.loads(0).token_usage(), 0.5);
    EXPECT_EQ(m.loads(0).num_used_tokens(), 50 * engine_.options().block_size);
  }
}

TEST_F(VllmEngineServiceTest, GetTokenizerSendsTheModelFoldersTokenizerFiles) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("vllm-tok-" + std::to_string(::getpid()) + "-" +
                    std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
  };
  write("tokenizer.json", R"({"model": {"type": "BPE"}})");
  write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  write("model.safetensors", std::string(1000, 'w'));  // weights stay out
  engine_.opts.model_path = dir.string();
  start();
  grpc::ClientContext ctx;
  auto reader = stub_->GetTokenizer(&ctx, cpb::GetTokenizerRequest());
  std::string zip;
  std::vector<std::string> shas;
  cpb::GetTokenizerChunk chunk;
  while (reader->Read(&chunk)) {
    zip += chunk.data();
    shas.push_back(chunk.sha256());
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_FALSE(shas.empty());
  EXPECT_EQ(shas.back().size(), 64u);
  EXPECT_EQ(shas.back(), sha256_hex(zip));
  const auto entries = stored_entries(zip);
  EXPECT_EQ(entries, (std::map<std::string, std::string>{
                         {"tokenizer.json", R"({"model": {"type": "BPE"}})"},
                         {"tokenizer_config.json", R"({"eos_token": "</s>"})"}}));
  // A folder without tokenizer.json: FAILED_PRECONDITION naming it.
  std::filesystem::remove(dir / "tokenizer.json");
  auto none = make_tokenizer_bundle(engine_);
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("tokenizer.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_F(VllmEngineServiceTest, KvEventsStreamFromTheBus) {
  start();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  cpb::SubscribeKvEventsRequest req;
  auto reader = stub_->SubscribeKvEvents(&ctx, req);
  // The headers come at once, before any batch (smg gives up on a subscription after 2 s).
  const auto asked = std::chrono::steady_clock::now();
  reader->WaitForInitialMetadata();
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(1));
  // The subscription starts at the next batch: wait until the server has subscribed.
  for (int i = 0; i < 200 && engine_.bus.num_subscribers() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(engine_.bus.num_subscribers(), 1u);
  KvBlockStored stored;
  stored.block_hashes = {11, 12};
  stored.parent_block_hash = 7;
  stored.block_size = 2;
  stored.token_ids = {1, 2, 3, 4};
  engine_.bus.publish({stored, KvBlockRemoved{{11}, {}}}, 123.5);
  engine_.bus.publish({KvAllBlocksCleared{}}, 124.0);
  cpb::KvEventBatch b;
  ASSERT_TRUE(reader->Read(&b));
  EXPECT_EQ(b.sequence_number(), 0u);
  EXPECT_DOUBLE_EQ(b.timestamp(), 123.5);
  ASSERT_EQ(b.events_size(), 2);
  const cpb::KvBlocksStored& s = b.events(0).stored();
  ASSERT_EQ(s.blocks_size(), 2);
  EXPECT_EQ(s.blocks(0).block_hash(), 11);
  EXPECT_EQ(std::vector<uint32_t>(s.blocks(1).token_ids().begin(), s.blocks(1).token_ids().end()),
            (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(s.blocks(1).block_size(), 2);
  EXPECT_EQ(s.parent_block_hash(), 7);
  EXPECT_EQ(b.events(1).removed().block_hashes(0), 11);
  ASSERT_TRUE(reader->Read(&b));
  EXPECT_EQ(b.sequence_number(), 1u);
  EXPECT_TRUE(b.events(0).has_cleared());
  ctx.TryCancel();
  while (reader->Read(&b)) {
  }
}

size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Issue 51, finding 12: a thread per subscriber and no cap (400 subscribers, +400 threads).
TEST_F(VllmEngineServiceTest, KvEventSubscribersAreCappedAndCostNoThreadEach) {
  constexpr int kCap = 8;
  ServerOptions o;
  o.max_kv_event_subscribers = kCap;
  start(o);
  struct Sub {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<cpb::KvEventBatch>> reader;
  };
  auto subscribe = [&] {
    auto s = std::make_unique<Sub>();
    s->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    s->reader = stub_->SubscribeKvEvents(&s->ctx, cpb::SubscribeKvEventsRequest());
    return s;
  };
  auto wait_subscribers = [&](size_t n) {
    for (int i = 0; i < 500 && engine_.bus.num_subscribers() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return engine_.bus.num_subscribers() == n;
  };
  std::vector<std::unique_ptr<Sub>> subs;
  subs.push_back(subscribe());
  subs.back()->reader->WaitForInitialMetadata();
  ASSERT_TRUE(wait_subscribers(1));
  const size_t threads_with_one = thread_count();
  while (subs.size() < kCap) {
    subs.push_back(subscribe());
    subs.back()->reader->WaitForInitialMetadata();
  }
  ASSERT_TRUE(wait_subscribers(kCap));
  // Seven more subscribers: no thread each (a thread per subscriber made this +7).
  EXPECT_LE(thread_count(), threads_with_one + 2) << "with one subscriber: " << threads_with_one;

  // One past the cap: RESOURCE_EXHAUSTED, naming the setting.
  auto extra = subscribe();
  cpb::KvEventBatch b;
  EXPECT_FALSE(extra->reader->Read(&b));
  const grpc::Status refused = extra->reader->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("kv_events.max_grpc_subscribers"), std::string::npos)
      << refused.error_message();
  EXPECT_EQ(engine_.bus.num_subscribers(), static_cast<size_t>(kCap));

  // Every subscriber gets every batch, from the one shared thread.
  engine_.bus.publish({KvBlockRemoved{{5}, {}}}, 1.0);
  engine_.bus.publish({KvBlockRemoved{{6}, {}}}, 2.0);
  for (auto& s : subs) {
    ASSERT_TRUE(s->reader->Read(&b));
    EXPECT_EQ(b.sequence_number(), 0u);
    ASSERT_TRUE(s->reader->Read(&b));
    EXPECT_EQ(b.sequence_number(), 1u);
    EXPECT_EQ(b.events(0).removed().block_hashes(0), 6);
  }

  // A subscriber that leaves frees its slot.
  subs.front()->ctx.TryCancel();
  while (subs.front()->reader->Read(&b)) {
  }
  EXPECT_EQ(subs.front()->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  subs.erase(subs.begin());
  ASSERT_TRUE(wait_subscribers(kCap - 1));
  subs.push_back(subscribe());
  subs.back()->reader->WaitForInitialMetadata();
  ASSERT_TRUE(wait_subscribers(kCap));
  engine_.bus.publish({KvAllBlocksCleared{}}, 3.0);
  ASSERT_TRUE(subs.back()->reader->Read(&b));
  EXPECT_EQ(b.sequence_number(), 2u);
  EXPECT_TRUE(b.events(0).has_cleared());
  for (auto& s : subs) s->ctx.TryCancel();
  for (auto& s : subs) {
    while (s->reader->Read(&b)) {
    }
    s->reader->Finish();
  }
}

// The engine's bus closing ends every stream UNAVAILABLE (the gateway resubscribes elsewhere).
TEST_F(VllmEngineServiceTest, KvEventStreamsEndWhenTheBusCloses) {
  start();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto reader = stub_->SubscribeKvEvents(&ctx, cpb::SubscribeKvEventsRequest());
  reader->WaitForInitialMetadata();
  for (int i = 0; i < 200 && engine_.bus.num_subscribers() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  engine_.bus.close();
  cpb::KvEventBatch b;
  EXPECT_FALSE(reader->Read(&b));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace llmserve
