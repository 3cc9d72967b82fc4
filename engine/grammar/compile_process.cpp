#include "engine/grammar/compile_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;

// The child's reply: a tag byte, an 8-byte length, then that many bytes.
constexpr char kTagDone = 'O';
constexpr char kTagOutOfMemory = 'M';
constexpr char kTagFailed = 'F';
constexpr size_t kHeader = 9;

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void reply(int fd, char tag, const std::string& payload) {
  char header[kHeader];
  header[0] = tag;
  const uint64_t size = payload.size();
  std::memcpy(header + 1, &size, sizeof(size));
  if (write_all(fd, header, kHeader)) (void)write_all(fd, payload.data(), payload.size());
}

int64_t address_space_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long long pages = -1;
  if (std::fscanf(f, "%lld", &pages) != 1) pages = -1;
  std::fclose(f);
  return pages < 0 ? -1 : pages * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

[[noreturn]] void child_main(int fd, const std::function<std::string()>& work, int64_t memory_cap) {
  // Hold none of the parent's sockets or files: a client's disconnect must reach the parent.
  if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
  ::close_range(static_cast<unsigned>(fd) + 1, ~0u, 0);
  if (memory_cap > 0) {
    const rlimit limit{static_cast<rlim_t>(memory_cap), static_cast<rlim_t>(memory_cap)};
    ::setrlimit(RLIMIT_AS, &limit);
  }
  try {
    reply(fd, kTagDone, work());
  } catch (const std::bad_alloc&) {
    reply(fd, kTagOutOfMemory, "");
  } catch (const std::exception& e) {
    reply(fd, kTagFailed, e.what());
  } catch (...) {
    reply(fd, kTagFailed, "unknown exception");
  }
  ::_exit(0);
}

}  // namespace

bool child_processes_available() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return false;
#else
  return true;
#endif
#else
  return true;
#endif
}

ChildResult run_in_child_process(const std::function<std::string()>& work,
                                 Clock::time_point deadline, const std::function<bool()>& cancelled,
                                 int64_t extra_memory_bytes, std::chrono::milliseconds poll) {
  ChildResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.detail = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  const int64_t base = address_space_bytes();
  const int64_t cap = base > 0 && extra_memory_bytes > 0 ? base + extra_memory_bytes : -1;
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.detail = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], work, cap);
  }
  ::close(fds[1]);
  const int fd = fds[0];

  std::string got;
  bool eof = false;
  char buf[1 << 16];
  while (!eof) {
    const bool complete = got.size() >= kHeader && [&] {
      uint64_t size = 0;
      std::memcpy(&size, got.data() + 1, sizeof(size));
      return got.size() - kHeader >= size;
    }();
    if (complete) break;
    if (Clock::now() >= deadline) {
      result.end = ChildEnd::kTimedOut;
      break;
    }
    if (cancelled && cancelled()) {
      result.end = ChildEnd::kCancelled;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(poll.count()));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
    } else {
      got.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  const bool killed = result.end == ChildEnd::kTimedOut || result.end == ChildEnd::kCancelled;
  if (killed) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) return result;

  uint64_t size = 0;
  if (got.size() >= kHeader) std::memcpy(&size, got.data() + 1, sizeof(size));
  if (got.size() < kHeader || got.size() - kHeader < size) {
    result.end = ChildEnd::kFailed;
    if (WIFSIGNALED(status)) {
      result.detail = "the compile process died (signal " + std::to_string(WTERMSIG(status)) + ")";
      // An address-space cap hit outside operator new (e.g. a thread's stack) ends in a signal.
      if (cap > 0 && WTERMSIG(status) == SIGSEGV) result.end = ChildEnd::kOutOfMemory;
    } else {
      result.detail = "the compile process exited without a result";
    }
    return result;
  }
  result.output = got.substr(kHeader, size);
  switch (got[0]) {
    case kTagDone:
      result.end = ChildEnd::kDone;
      break;
    case kTagOutOfMemory:
      result.end = ChildEnd::kOutOfMemory;
      break;
    default:
      result.end = ChildEnd::kFailed;
      result.detail = result.output;
      result.output.clear();
  }
  return result;
}

}  // namespace llmserve
