#include "server/grpc/pumped_writer.h"

namespace llmserve {

void PumpedWriter::OnWriteDone(bool ok) {
  std::lock_guard lock(mu_);
  writing_ = false;
  if (!ok) broken_ = true;
  cv_.notify_all();
}

void PumpedWriter::OnCancel() {
  on_cancel();
  mark_broken();
}

void PumpedWriter::OnDone() {
  // OnDone may run on the pump thread itself (inside Finish); never join from there.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else if (thread_.joinable()) {
    thread_.join();
  }
  delete this;
}

void PumpedWriter::start_pump() {
  thread_ = std::thread([this] { pump(); });
}

bool PumpedWriter::send(const grpc::ByteBuffer* bytes) {
  std::unique_lock lock(mu_);
  if (broken_) return false;
  writing_ = true;
  StartWrite(bytes);
  cv_.wait(lock, [this] { return !writing_; });
  return !broken_;
}

bool PumpedWriter::broken() {
  std::lock_guard lock(mu_);
  return broken_;
}

void PumpedWriter::mark_broken() {
  std::lock_guard lock(mu_);
  broken_ = true;
  cv_.notify_all();
}

}  // namespace llmserve
