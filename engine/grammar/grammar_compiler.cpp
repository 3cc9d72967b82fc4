#include "engine/grammar/grammar_compiler.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/grammar/compile_process.h"
#include "engine/grammar/grammar_build.h"

namespace llmserve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kWaitPoll = std::chrono::milliseconds(20);

bool same_spec(const GrammarSpec& a, const GrammarSpec& b) {
  return a.kind == b.kind && a.text == b.text && a.choices == b.choices &&
         a.max_repeats == b.max_repeats;
}

std::string seconds_text(double s) {
  std::string t = std::to_string(s);
  t.erase(t.find_last_not_of('0') + 1);
  if (t.ends_with('.')) t.pop_back();
  return t;
}

}  // namespace

struct GrammarCompiler::State {
  // One compile: queued, running, or done. Shared by its cache entry, the queue and waiters.
  struct Job {
    GrammarSpec spec;
    std::promise<Result<CompiledGrammarPtr>> promise;
    GrammarFuture future;
    int32_t waiters = 0;               // under mu
    bool settled = false;              // under mu: the promise has its value
    std::atomic<bool> dropped{false};  // nobody waits (or shutdown): do not start, or kill
  };
  struct Entry {
    std::shared_ptr<Job> job;
    std::list<uint64_t>::iterator lru;
    int64_t bytes = 0;  // once compiled
  };

  GrammarBuild build;
  GrammarCompilerOptions options;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Job>> queue;
  std::atomic<bool> stopping{false};
  std::vector<std::thread> threads;
  std::unordered_map<uint64_t, Entry> cache;
  std::list<uint64_t> lru;  // most recent first
  GrammarCompilerStats stats;

  State(const Tokenizer& t, int32_t v, GrammarCompilerOptions o) : build(t, v), options(o) {}

  void worker() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) return;
        job = std::move(queue.front());
        queue.pop_front();
      }
      if (job->dropped) {
        std::lock_guard lock(mu);
        settle(*job, Status(StatusCode::kCancelled, "nobody waits for this grammar any more"));
        continue;
      }
      run(*job);
    }
  }

  // Under mu.
  void erase_entry(std::unordered_map<uint64_t, Entry>::iterator it) {
    stats.cached_bytes -= it->second.bytes;
    lru.erase(it->second.lru);
    cache.erase(it);
    stats.cached = static_cast<int64_t>(cache.size());
  }

  // Under mu: drops the job's cache entry when it is still this job's.
  void forget(const Job& job) {
    auto it = cache.find(job.spec.key());
    if (it != cache.end() && it->second.job.get() == &job) erase_entry(it);
  }

  // Under mu: least recently used entries leave until both bounds hold; compiles in flight and
  // `keep` stay.
  void evict(uint64_t keep) {
    const auto max_entries = static_cast<size_t>(std::max(options.cache_entries, 1));
    auto it = lru.end();
    while (it != lru.begin() &&
           (cache.size() > max_entries || stats.cached_bytes > options.cache_bytes)) {
      --it;
      const uint64_t key = *it;
      auto e = cache.find(key);
      const bool done =
          e->second.job->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      if (key == keep || !done) continue;
      ++it;  // erase_entry invalidates the element `it` points at
      erase_entry(e);
    }
  }

  Result<CompiledGrammarPtr> compile_checked(const Job& job) {
    const GrammarSpec& spec = job.spec;
    if (spec.kind == GrammarKind::kChoice && spec.choices.empty()) {
      return invalid_argument("choice: needs at least one choice");
    }
    if (spec.kind == GrammarKind::kTaggedJson &&
        (spec.choices.size() != 2 || spec.max_repeats < 1 || spec.max_repeats > 16)) {
      return invalid_argument("tagged_json: needs {begin, end} tags and 1..16 repeats");
    }
    if (spec.kind == GrammarKind::kJsonSchema || spec.kind == GrammarKind::kTaggedJson) {
      if (Status s = check_json_schema(spec.text, options.schema); !s.is_ok()) {
        return grammar_error(spec, s.message());
      }
    }
    build.prepare();  // in this process, so every child inherits the tables
    if (!child_processes_available()) {
      try {
        return build.read_reply(spec, build.compile_reply(spec, options.max_grammar_bytes));
      } catch (const std::exception& e) {
        return internal_error(std::string("the grammar compile failed: ") + e.what());
      }
    }
    const auto budget = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(options.compile_timeout_seconds, 0.001)));
    const int64_t max_bytes = options.max_grammar_bytes;
    ChildResult child = run_in_child_process(
        [&] { return build.compile_reply(spec, max_bytes); }, Clock::now() + budget,
        [&] { return job.dropped.load() || stopping.load(); }, options.compile_memory_bytes);
    switch (child.end) {
      case ChildEnd::kDone:
        return build.read_reply(spec, child.output);
      case ChildEnd::kTimedOut: {
        std::lock_guard lock(mu);
        ++stats.timed_out;
        return grammar_error(spec, "it did not compile within " +
                                       seconds_text(options.compile_timeout_seconds) +
                                       " s (engine.grammar_compile_timeout_seconds); simplify it");
      }
      case ChildEnd::kCancelled:
        if (stopping) return unavailable("the server is shutting down");
        return Status(StatusCode::kCancelled, "nobody waits for this grammar any more");
      case ChildEnd::kOutOfMemory:
        return grammar_error(spec, "compiling it needs more than " +
                                       std::to_string(options.compile_memory_bytes >> 20) +
                                       " MiB (engine.grammar_compile_memory_bytes); simplify it");
      case ChildEnd::kFailed:
        break;
    }
    return internal_error("the grammar compile failed: " + child.detail);
  }

  void run(Job& job) {
    const auto began = Clock::now();
    Result<CompiledGrammarPtr> r = compile_checked(job);
    const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
    std::lock_guard lock(mu);
    ++stats.compiled;
    stats.compile_seconds += seconds;
    const StatusCode code = r.is_ok() ? StatusCode::kOk : r.status().code();
    const bool not_the_grammars_fault = code == StatusCode::kCancelled ||
                                        code == StatusCode::kUnavailable ||
                                        code == StatusCode::kInternal;
    if (!r.is_ok() && !not_the_grammars_fault) ++stats.failed;
    auto it = cache.find(job.spec.key());
    if (it != cache.end() && it->second.job.get() == &job) {
      if (r.is_ok()) {
        it->second.bytes = static_cast<int64_t>((*r)->memory_bytes());
        stats.cached_bytes += it->second.bytes;
      } else if (not_the_grammars_fault) {
        erase_entry(it);  // the next request compiles it again
      }
    }
    settle(job, std::move(r));
    evict(job.spec.key());
  }

  // Under mu.
  static void settle(Job& job, Result<CompiledGrammarPtr> r) {
    if (job.settled) return;
    job.settled = true;
    job.promise.set_value(std::move(r));
  }

  // Under mu: the cached or newly queued compile of `spec`, or an error ready at once (and no
  // job) when shut down or the queue is full.
  std::pair<GrammarFuture, std::shared_ptr<Job>> start(const GrammarSpec& spec) {
    const uint64_t key = spec.key();
    auto ready_error = [](Status st) {
      std::promise<Result<CompiledGrammarPtr>> p;
      p.set_value(std::move(st));
      return std::pair<GrammarFuture, std::shared_ptr<Job>>{p.get_future().share(), nullptr};
    };
    if (stopping) return ready_error(unavailable("the server is shutting down"));
    auto it = cache.find(key);
    if (it != cache.end() && same_spec(it->second.job->spec, spec)) {
      lru.splice(lru.begin(), lru, it->second.lru);
      ++stats.cache_hits;
      return {it->second.job->future, it->second.job};
    }
    if (static_cast<int32_t>(queue.size()) >= std::max(options.max_queued, 1)) {
      return ready_error(resource_exhausted("too many grammars are waiting to compile (" +
                                            std::to_string(queue.size()) + "); retry later"));
    }
    if (it != cache.end()) erase_entry(it);  // a hash collision: the newer spec takes the slot
    auto job = std::make_shared<Job>();
    job->spec = spec;
    job->future = job->promise.get_future().share();
    lru.push_front(key);
    cache.emplace(key, Entry{job, lru.begin(), 0});
    stats.cached = static_cast<int64_t>(cache.size());
    evict(key);
    queue.push_back(job);
    cv.notify_one();
    return {job->future, job};
  }
};

GrammarCompiler::GrammarCompiler(const Tokenizer& tokenizer, int32_t vocab_size,
                                 GrammarCompilerOptions options)
    : state_(std::make_unique<State>(tokenizer, vocab_size, options)) {
  const int32_t n = std::max(options.threads, 1);
  for (int32_t i = 0; i < n; ++i) state_->threads.emplace_back([s = state_.get()] { s->worker(); });
}

GrammarCompiler::~GrammarCompiler() {
  shutdown();
  for (auto& t : state_->threads) t.join();
}

void GrammarCompiler::shutdown() {
  State& s = *state_;
  {
    std::lock_guard lock(s.mu);
    if (s.stopping.exchange(true)) return;
    for (auto& job : s.queue) {
      job->dropped = true;
      State::settle(*job, unavailable("the server is shutting down"));
      s.forget(*job);
    }
    s.queue.clear();
  }
  s.cv.notify_all();
}

GrammarFuture GrammarCompiler::compile(const GrammarSpec& spec) {
  std::lock_guard lock(state_->mu);
  return state_->start(spec).first;
}

Result<CompiledGrammarPtr> GrammarCompiler::compile_and_wait(
    const GrammarSpec& spec, Clock::time_point deadline, const std::function<bool()>& cancelled) {
  State& s = *state_;
  GrammarFuture f;
  std::shared_ptr<State::Job> job;
  {
    std::lock_guard lock(s.mu);
    std::tie(f, job) = s.start(spec);
    if (job) ++job->waiters;
  }
  Status left = Status::ok();
  while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    const auto now = Clock::now();
    if (now >= deadline) {
      left =
          Status(StatusCode::kDeadlineExceeded, "the grammar did not compile before the deadline");
      break;
    }
    if (cancelled && cancelled()) {
      left = Status(StatusCode::kCancelled, "the client went away while its grammar compiled");
      break;
    }
    f.wait_until(std::min(deadline, now + kWaitPoll));
  }
  if (job) {
    std::lock_guard lock(s.mu);
    const bool done = f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    if (--job->waiters == 0 && !done && !left.is_ok()) {
      // The last waiter left: a queued compile leaves the queue (freeing its place), a running
      // one is killed.
      job->dropped = true;
      s.forget(*job);
      ++s.stats.abandoned;
      auto queued = std::find(s.queue.begin(), s.queue.end(), job);
      if (queued != s.queue.end()) {
        s.queue.erase(queued);
        State::settle(*job,
                      Status(StatusCode::kCancelled, "nobody waits for this grammar any more"));
      }
    }
  }
  if (!left.is_ok()) return Status(left.code(), spec.field + ": " + left.message());
  const Result<CompiledGrammarPtr>& r = f.get();
  if (!r.is_ok()) return Status(r.status().code(), spec.field + ": " + r.status().message());
  return *r;
}

GrammarCompilerStats GrammarCompiler::stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

}  // namespace llmserve
