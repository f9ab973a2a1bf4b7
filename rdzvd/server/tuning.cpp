// Why each setting (see tuning.hpp). Numbers are rdzv-bench runs of 2048 participants on a
// 2-core machine, rdzvd and the participants in the same box.
#include "tuning.hpp"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <malloc.h>

namespace llmrdzv::server {

void tune_process() {
  // Debian builds abseil without NDEBUG, so absl::Mutex (every lock inside gRPC) runs its
  // deadlock detector by default: each acquisition updates a global lock-order graph with stack
  // traces. That was about 11% of rdzvd's CPU and 7 MiB of its RSS at 2048 connections. gRPC's
  // own release builds run with it off; rdzvd takes no absl lock itself.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // One malloc arena. gRPC's two polling threads allocate and free every call's arena and
  // buffers; with an arena per thread, glibc grows each thread heap page range by page range
  // with mprotect (about 8 calls per participant measured) and cannot reuse one thread's free
  // memory for the other. Contention on the single arena is negligible at two polling threads.
  mallopt(M_ARENA_MAX, 1);
}

void tune_server(grpc::ServerBuilder& builder) {
  // BDP probing sizes HTTP/2 flow-control windows for bulk transfers by sending a PING whenever
  // data arrives after a quiet spell. Rendezvous traffic is small messages on thousands of
  // connections, so every burst cost an extra write and read per connection for nothing. The
  // 64 KiB default window still moves large store values at hundreds of MB/s on a LAN.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
}

}  // namespace llmrdzv::server
