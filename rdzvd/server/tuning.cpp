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
  // No channelz: rdzvd registers no channelz service, so the per-connection socket nodes and
  // per-call counters it keeps would never be read (about 450 bytes per connection).
  builder.AddChannelArgument(GRPC_ARG_ENABLE_CHANNELZ, 0);
  // At most 100 live calls per connection (HTTP/2's recommended minimum; gRPC's default is
  // unbounded). A client of the library keeps one Session stream and a few unary calls; the
  // credential check refuses calls without a token from their headers, and this bounds what one
  // connection of a token holder can keep open at once. Calls past it wait in the client.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 100);
  // Deliberately not set, for the record:
  // - a grpc::ResourceQuota memory bound: past it gRPC reclaims memory by cancelling streams,
  //   and a cancelled Session stream is a member failure that ends the round for everyone;
  // - GRPC_ARG_MINIMAL_STACK (-4 MiB RSS and a few % CPU at 2048): it drops the server's
  //   deadline and compression filters, so calls past their deadline and compressed requests
  //   would behave differently;
  // - the TCP read chunk sizes: gRPC 1.51 reads into fixed 8 KiB slices whatever they say, and
  //   they did not change rdzvd's peak RSS.
  // The number of callback threads is fixed by gRPC (two "nexting" threads on this machine).
  // Pinning rdzvd and the benchmark to one core each did not help either (775-1094 ms against
  // 578-778 ms unpinned at the same load).
  //
  // What is left is gRPC 1.51's own memory per connection and per call, which no setting moves:
  // - every server call takes an arena of the channel's call-size estimate, measured at 12.8 to
  //   13.1 KiB (a uprobe on grpc_core::Arena::CreateWithAlloc), 9184 bytes of it the call and its
  //   filter stack; every live call (Session stream, blocked Join, Wait or Barrier) holds one;
  // - every connection keeps an 8 KiB read slice between reads (given back only under
  //   ResourceQuota pressure, see above), a 3.9 KiB transport, a 3.2 KiB table of the 20
  //   registered methods (2 slots of 80 bytes each) and a 2.2 KiB endpoint. At 2048 connections
  //   rdzvd stands at 54 MiB after connecting and the baseline calls;
  // - the round and barrier add 66 MiB on top (33 KiB per member: the Session stream and the
  //   blocked Wait, plus Joins still finishing). With the one Barrier call the client library
  //   makes, members reach the barrier sooner, more Joins overlap and the peak is 137 MiB.
  // Peak RSS under 100 MiB at 2048 members therefore needs at most one live call per member:
  // that is why a SessionOpen may carry the Join and the store calls that block ride on the stream
  // as SessionCalls (see the proto and session_reactor.cpp). With the client library's path (join
  // and Barrier on the stream) the peak is 89.7 MiB; with Join + Session + Barrier calls it stays
  // at 137 MiB.
  // Debian builds gRPC without NDEBUG too: each completion is checked by a linear scan of the
  // completion queue's outstanding tags (cq_check_tag), ~6% of rdzvd's CPU at 2048 members and
  // growing with the live calls.
}

}  // namespace llmrdzv::server
