// Implementation of the persistent chunked thread pool (see worker_pool.hpp).
#include "worker_pool.hpp"

#include <algorithm>

namespace llmrdzv::optim {

WorkerPool& WorkerPool::instance() {
  static WorkerPool pool;
  return pool;
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void WorkerPool::grow_to(unsigned workers) {
  while (workers_.size() < workers) {
    const auto index = static_cast<unsigned>(workers_.size());
    workers_.emplace_back([this, index] { worker_loop(index); });
  }
}

void WorkerPool::drain() {
  for (std::size_t chunk = next_chunk_.fetch_add(1); chunk < chunks_;
       chunk = next_chunk_.fetch_add(1)) {
    (*body_)(chunk);
  }
}

void WorkerPool::worker_loop(unsigned worker_index) {
  std::uint64_t seen_generation = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || (generation_ != seen_generation && worker_index < active_workers_);
      });
      if (stopping_) return;
      seen_generation = generation_;
    }
    drain();
    {
      std::lock_guard lock(mutex_);
      if (--busy_workers_ == 0) done_.notify_one();
    }
  }
}

void WorkerPool::run(std::size_t chunks, unsigned threads,
                     const std::function<void(std::size_t)>& body) {
  if (chunks == 0) return;
  const unsigned helpers =
      static_cast<unsigned>(std::min<std::size_t>(threads > 0 ? threads - 1 : 0, chunks - 1));
  if (helpers == 0) {
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) body(chunk);
    return;
  }
  std::lock_guard run_lock(run_mutex_);
  {
    std::lock_guard lock(mutex_);
    grow_to(helpers);
    body_ = &body;
    chunks_ = chunks;
    next_chunk_.store(0);
    active_workers_ = helpers;
    busy_workers_ = helpers;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_workers_ == 0; });
  body_ = nullptr;
}

}  // namespace llmrdzv::optim
