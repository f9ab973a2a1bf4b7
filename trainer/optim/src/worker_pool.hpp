// A small persistent thread pool that splits one index range into chunks. AdamW runs once per
// optimizer step on large shards; keeping the workers alive avoids thread start-up per step and
// keeps the kernel free of any torch/OpenMP dependency.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llmrdzv::optim {

class WorkerPool {
 public:
  // The process-wide pool; it grows on demand to the largest thread count ever asked for.
  static WorkerPool& instance();

  ~WorkerPool();

  // Calls body(chunk) once for every chunk in [0, chunks), on up to `threads` threads (the
  // caller included), and returns when all have finished. Calls from several threads are
  // serialised. body must not throw.
  void run(std::size_t chunks, unsigned threads, const std::function<void(std::size_t)>& body);

 private:
  WorkerPool() = default;
  void grow_to(unsigned workers);
  void worker_loop(unsigned worker_index);
  void drain();

  std::mutex run_mutex_;  // one run() at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  const std::function<void(std::size_t)>* body_ = nullptr;
  std::size_t chunks_ = 0;
  std::atomic<std::size_t> next_chunk_{0};
  unsigned active_workers_ = 0;  // workers taking part in the current run
  unsigned busy_workers_ = 0;    // of those, still draining chunks
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
};

}  // namespace llmrdzv::optim
