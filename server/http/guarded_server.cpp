#include "server/http/guarded_server.h"

namespace llmserve {

namespace {

// Runs each accept's follow-up at once on the accept thread: it only hands the socket over.
class InlineTaskQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

}  // namespace

GuardedServer::GuardedServer(std::function<void(int fd)> adopt) : adopt_(std::move(adopt)) {
  new_task_queue = [] { return new InlineTaskQueue; };
}

bool GuardedServer::serve(ConnectionStream& stream, bool last) {
  bool connection_closed = false;
  const bool ok = process_request(stream, last, connection_closed, nullptr);
  return ok && !connection_closed && !last;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  adopt_(sock);
  return true;
}

}  // namespace llmserve
