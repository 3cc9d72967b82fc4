// A server-streaming reactor fed by its own thread: the subclass's pump() runs there, sends each
// message with send() (one write in flight, waited for), and ends with Finish(). OnDone joins the
// thread (or detaches it when Finish ran on it) and deletes the reactor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace llmserve {

class PumpedWriter : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  ~PumpedWriter() override = default;

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 protected:
  // Call last in the subclass's constructor, once everything pump() reads is set.
  void start_pump();
  virtual void pump() = 0;
  // The client went away: stop the work behind the call (called before the call is marked broken).
  virtual void on_cancel() {}
  // Writes `bytes` and waits for the write; false when the call broke (nothing was written, or
  // the write failed). `bytes` must stay untouched until it returns.
  bool send(const grpc::ByteBuffer* bytes);
  bool broken();
  void mark_broken();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;
  bool broken_ = false;
  std::thread thread_;
};

}  // namespace llmserve
