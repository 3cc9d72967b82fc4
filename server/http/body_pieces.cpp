#include "server/http/body_pieces.h"

#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace llmserve {

namespace {

constexpr size_t kWriteBytes = 256u << 10;  // pieces gathered per socket write

struct Sending {
  std::shared_ptr<ResponseBuilder> builder;
  std::string pending;  // gathered, not yet written
  size_t sent = 0;
  bool ended = false;

  // Gathers pieces until `bytes` are pending or the body ends.
  void gather(size_t bytes) {
    std::string piece;
    while (!ended && pending.size() < bytes) {
      if (builder->next_body_piece(&piece)) {
        pending += piece;
      } else {
        ended = true;
      }
    }
  }
};

}  // namespace

void give_memory_back() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void send_body_pieces(httplib::Response& res, std::shared_ptr<ResponseBuilder> builder) {
  auto s = std::make_shared<Sending>();
  s->builder = std::move(builder);
  s->gather(kInlineBodyBytes);
  res.status = 200;
  if (s->ended) {
    res.set_content(s->pending, "application/json");
    return;
  }
  res.set_chunked_content_provider(
      "application/json",
      [s](size_t /*offset*/, httplib::DataSink& sink) {
        s->gather(kWriteBytes);
        if (!s->pending.empty()) {
          if (!sink.is_writable() || !sink.write(s->pending.data(), s->pending.size())) {
            return false;
          }
          s->sent += s->pending.size();
          s->pending.clear();
        }
        if (s->ended) sink.done();
        return true;
      },
      [s](bool /*success*/) {
        s->builder.reset();
        std::string().swap(s->pending);
        if (s->sent >= kTrimAfterBytes) give_memory_back();
      });
}

}  // namespace llmserve
