// One measured run of N rendezvous participants, each with its own gRPC channel (own TCP
// connection), driven by gRPC's callback API so a few threads can play thousands of participants
// and the measurement is about rdzvd, not about client threads. Phases:
//   connect   all channels connect (not timed);
//   baseline  released together, every participant makes one trivial call (unscoped Status): the
//             cost of N concurrent calls on this machine, the yardstick for the next phase;
//   timed     released together, every participant joins the round, opens its session (waits for
//             OPENED) and passes a store barrier, made one of two ways (BarrierKind); joining
//             and opening take either two calls or the one Session stream (Protocol);
//   leave     released together, every participant leaves (as ranks do when their job ends),
//             until every MEMBER_LEFT the daemon announces has been read (not part of the ratio;
//             rdzvd tells only the first leave of a round, to the N-1 others: before, every leave
//             went to every member still in, N(N-1)/2 events, 2.2 s of rdzvd CPU for 512).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace llmrdzv::bench {

// How the participants pass the store barrier of the timed phase.
enum class BarrierKind {
  add_wait,  // Add on one key, the last arrival Sets a done key, everyone Waits for it (3 calls)
  rpc,       // one Barrier, as the client library's KvSpace::barrier makes it (see Protocol)
};

// How the participants join and open their sessions (the client library's two paths).
enum class Protocol {
  stream,  // SessionOpen carries the Join; BarrierKind::rpc travels on the stream too (one call)
  calls,   // Join, then the Session stream; BarrierKind::rpc is the Barrier RPC (older daemons)
};

struct RunConfig {
  int participants = 8;
  std::string endpoint;
  std::string rdzv_id;
  std::string token;
  std::chrono::seconds timeout{120};
  pid_t daemon_pid = -1;  // when known, its CPU time over the timed phase is reported
  // Pauses before the timed phase (after printing "timed phase in N ms" on stderr) and after
  // it ("timed phase over"), so a profiler can watch rdzvd during the timed phase alone.
  std::chrono::milliseconds hold{0};
  BarrierKind barrier = BarrierKind::add_wait;
  Protocol protocol = Protocol::stream;
};

struct RunResult {
  std::vector<double> baseline_ms;  // per participant: release -> Status answered
  std::vector<double> join_ms;      // per participant: release -> Join answered (stream: = opened)
  std::vector<double> opened_ms;    // per participant: release -> session OPENED event read
  std::vector<double> added_ms;     // per participant: release -> Add answered (add_wait only)
  std::vector<double> total_ms;     // per participant: release -> barrier passed
  double baseline_wall_ms = 0;      // release -> last baseline call done
  double wall_ms = 0;               // release -> last participant through the barrier
  double connect_wall_ms = 0;       // connecting all channels (not part of the target)
  // CPU used during the timed phase, by rdzvd and by this process (all participants).
  std::optional<double> daemon_cpu_ms;
  double client_cpu_ms = 0;
  double leave_wall_ms = 0;                   // release of the leaves -> last MEMBER_LEFT read
  std::optional<double> leave_daemon_cpu_ms;  // rdzvd's CPU over that
  int member_left_events = 0;                 // MEMBER_LEFT events read, over all participants
};

// Throws std::runtime_error naming the first participant error, or when Protocol::stream is asked
// of a daemon that does not advertise it.
RunResult run_participants(const RunConfig& config);

}  // namespace llmrdzv::bench
