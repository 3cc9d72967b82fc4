// cpp-httplib's Server with its connection handling replaced: an accepted socket goes to the
// connection guard instead of a worker, and a worker serves one complete request at a time
// through cpp-httplib's own request processing (routes, handlers, SSE writers unchanged).
#pragma once

#include <functional>

#include <httplib.h>

#include "server/http/http_connection.h"

namespace llmserve {

class GuardedServer : public httplib::Server {
 public:
  // `adopt` takes every accepted socket (called on the accept thread).
  explicit GuardedServer(std::function<void(int fd)> adopt);

  // Runs routing and the handler for the one request in the stream. `last` answers with
  // "Connection: close". False when the connection must close (error, or the client asked).
  bool serve(ConnectionStream& stream, bool last);

 private:
  bool process_and_close_socket(socket_t sock) override;

  std::function<void(int fd)> adopt_;
};

}  // namespace llmserve
