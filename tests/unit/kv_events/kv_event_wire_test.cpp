// vLLM's KV-event wire format: the msgpack payload against bytes written out from the msgpack
// spec, and the ZeroMQ PUB / ROUTER replay framing against a plain libzmq subscriber.
#include <zmq.h>

#include <unistd.h>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server/kv_events/kv_event_msgpack.h"
#include "server/kv_events/zmq_kv_publisher.h"

namespace llmserve {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string str8(const std::string& s) {  // fixstr (< 32 bytes)
  return bytes({0xa0 | static_cast<int>(s.size())}) + s;
}

// Fields are set one by one: GCC 12's -Wmaybe-uninitialized misfires on aggregate temporaries
// of these variants pushed into a vector.
KvBlockStored stored(std::vector<uint64_t> hashes, std::optional<uint64_t> parent,
                     std::vector<int32_t> tokens, int32_t block_size, std::string medium = {}) {
  KvBlockStored e;
  e.block_hashes = std::move(hashes);
  e.parent_block_hash = parent;
  e.token_ids = std::move(tokens);
  e.block_size = block_size;
  e.medium = std::move(medium);
  return e;
}

KvBlockRemoved removed(std::vector<uint64_t> hashes, std::string medium = {}) {
  KvBlockRemoved e;
  e.block_hashes = std::move(hashes);
  e.medium = std::move(medium);
  return e;
}

KvEventBatch sample_batch() {
  KvEventBatch b;
  b.sequence_number = 0;
  b.timestamp = 1.5;
  b.events.emplace_back(stored({1, 0x7fffffffffffffffULL}, std::nullopt, {5, 200}, 1));
  b.events.emplace_back(stored({9}, uint64_t{1}, {70000}, 1));
  b.events.emplace_back(removed({7}));
  b.events.emplace_back(KvAllBlocksCleared{});
  return b;
}

std::string header() {
  return bytes({0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x94});  // [1.5, [4 events...
}

TEST(KvEventMsgpack, MapLayoutMatchesVllmTaggedStructsByteForByte) {
  std::string want = header();
  // {"type": "BlockStored", "block_hashes": [1, 2^63-1], "parent_block_hash": nil,
  //  "token_ids": [5, 200], "block_size": 1, "lora_id": nil, "medium": "GPU", "lora_name": nil}
  want += bytes({0x88}) + str8("type") + str8("BlockStored") + str8("block_hashes") +
          bytes({0x92, 0x01, 0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) +
          str8("parent_block_hash") + bytes({0xc0}) + str8("token_ids") +
          bytes({0x92, 0x05, 0xcc, 0xc8}) + str8("block_size") + bytes({0x01}) + str8("lora_id") +
          bytes({0xc0}) + str8("medium") + str8("GPU") + str8("lora_name") + bytes({0xc0});
  want += bytes({0x88}) + str8("type") + str8("BlockStored") + str8("block_hashes") +
          bytes({0x91, 0x09}) + str8("parent_block_hash") + bytes({0x01}) + str8("token_ids") +
          bytes({0x91, 0xce, 0x00, 0x01, 0x11, 0x70}) + str8("block_size") + bytes({0x01}) +
          str8("lora_id") + bytes({0xc0}) + str8("medium") + str8("GPU") + str8("lora_name") +
          bytes({0xc0});
  want += bytes({0x83}) + str8("type") + str8("BlockRemoved") + str8("block_hashes") +
          bytes({0x91, 0x07}) + str8("medium") + str8("GPU");
  want += bytes({0x81}) + str8("type") + str8("AllBlocksCleared");
  want += bytes({0x00});  // data_parallel_rank
  EXPECT_EQ(encode_kv_event_batch_msgpack(sample_batch(), "GPU", 0), want);
}

TEST(KvEventMsgpack, ATiersEventsNameTheirMedium) {
  KvEventBatch b;
  b.timestamp = 1.5;
  b.events.emplace_back(stored({9}, std::nullopt, {3}, 1, "DISK"));
  b.events.emplace_back(removed({9}, "DISK"));
  std::string want = bytes({0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x92});
  want += bytes({0x88}) + str8("type") + str8("BlockStored") + str8("block_hashes") +
          bytes({0x91, 0x09}) + str8("parent_block_hash") + bytes({0xc0}) + str8("token_ids") +
          bytes({0x91, 0x03}) + str8("block_size") + bytes({0x01}) + str8("lora_id") +
          bytes({0xc0}) + str8("medium") + str8("DISK") + str8("lora_name") + bytes({0xc0});
  want += bytes({0x83}) + str8("type") + str8("BlockRemoved") + str8("block_hashes") +
          bytes({0x91, 0x09}) + str8("medium") + str8("DISK");
  want += bytes({0x00});
  EXPECT_EQ(encode_kv_event_batch_msgpack(b, "GPU", 0), want);
}

TEST(KvEventMsgpack, ArrayLayoutMatchesVllmArrayLikeStructsByteForByte) {
  std::string want = header();
  // ["BlockStored", [1, 2^63-1], nil, [5, 200], 1, nil, "GPU", nil]
  want += bytes({0x98}) + str8("BlockStored") +
          bytes({0x92, 0x01, 0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc0, 0x92, 0x05,
                 0xcc, 0xc8, 0x01, 0xc0}) +
          str8("GPU") + bytes({0xc0});
  // ["BlockStored", [9], 1, [70000], 1, nil, "GPU", nil]
  want += bytes({0x98}) + str8("BlockStored") +
          bytes({0x91, 0x09, 0x01, 0x91, 0xce, 0x00, 0x01, 0x11, 0x70, 0x01, 0xc0}) + str8("GPU") +
          bytes({0xc0});
  want += bytes({0x93}) + str8("BlockRemoved") + bytes({0x91, 0x07}) + str8("GPU");
  want += bytes({0x91}) + str8("AllBlocksCleared");
  want += bytes({0x00});
  EXPECT_EQ(encode_kv_event_batch_msgpack(sample_batch(), "GPU", 0, KvEventLayout::kArray), want);
}

// Receives one multipart message (all frames), waiting up to timeout_ms for the first.
std::vector<std::string> recv_frames(void* socket, int timeout_ms) {
  zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout_ms, sizeof(timeout_ms));
  std::vector<std::string> frames;
  while (true) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, socket, 0) < 0) {
      zmq_msg_close(&m);
      return frames;
    }
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
    const bool more = zmq_msg_more(&m) != 0;
    zmq_msg_close(&m);
    if (!more) return frames;
  }
}

std::string be64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return s;
}

TEST(ZmqKvPublisher, PublishesThreeFramesAndReplaysFromASequenceNumber) {
  const std::string dir = "/tmp/llmserve-kv-wire-" + std::to_string(getpid());
  ZmqKvPublisherOptions o;
  o.endpoint = kv_events_pub_endpoint("127.0.0.1", "", 5557, "ipc://" + dir + "-pub");
  o.replay = kv_events_replay_endpoint("ipc://" + dir + "-replay");
  o.topic = "kv@127.0.0.1:8000@model";
  KvEventBus bus(8);
  auto pub = ZmqKvPublisher::start(bus, o);
  ASSERT_TRUE(pub.is_ok()) << pub.status().to_string();

  void* ctx = zmq_ctx_new();
  void* sub = zmq_socket(ctx, ZMQ_SUB);
  zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "kv@", 3);
  ASSERT_EQ(zmq_connect(sub, o.endpoint.endpoint.c_str()), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // PUB/SUB joins late

  const KvEventBatch b = sample_batch();
  bus.publish(b.events, b.timestamp);
  bus.publish({removed({42})}, 2.0);
  const std::vector<std::string> first = recv_frames(sub, 5000);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0], o.topic);
  EXPECT_EQ(first[1], be64(0));
  EXPECT_EQ(first[2], encode_kv_event_batch_msgpack(b, "GPU"));
  const std::vector<std::string> second = recv_frames(sub, 5000);
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[1], be64(1));

  void* dealer = zmq_socket(ctx, ZMQ_DEALER);
  ASSERT_EQ(zmq_connect(dealer, o.replay.endpoint.c_str()), 0);
  const std::string start = be64(1);
  zmq_send(dealer, "", 0, ZMQ_SNDMORE);
  zmq_send(dealer, start.data(), start.size(), 0);
  const std::vector<std::string> replayed = recv_frames(dealer, 5000);
  ASSERT_EQ(replayed.size(), 3u);  // "", seq, payload
  EXPECT_EQ(replayed[1], be64(1));
  EXPECT_EQ(replayed[2], second[2]);
  const std::vector<std::string> end = recv_frames(dealer, 5000);
  ASSERT_EQ(end.size(), 3u);
  EXPECT_EQ(end[1], std::string(8, '\xff'));  // -1: the end of the replay
  EXPECT_TRUE(end[2].empty());
  EXPECT_EQ((*pub)->replays_served(), 1u);

  zmq_close(dealer);
  zmq_close(sub);
  zmq_ctx_term(ctx);
}

TEST(ZmqKvPublisher, ABadEndpointIsAnErrorNamingIt) {
  KvEventBus bus(2);
  ZmqKvPublisherOptions o;
  o.endpoint = kv_events_pub_endpoint("127.0.0.1", "", 5557, "bogus://*:1");
  auto pub = ZmqKvPublisher::start(bus, o);
  ASSERT_FALSE(pub.is_ok());
  EXPECT_NE(pub.status().message().find("kv_events.endpoint 'bogus://*:1'"), std::string::npos)
      << pub.status().message();
}

}  // namespace
}  // namespace llmserve
