// The chunked OffloadAdamW step: the pipeline's schedule (two staging buffers, chunk i+1's
// download started before chunk i's update, every update after its own download has landed),
// and, across real ranks (1, 2 and 3, Gloo on loopback), that chunking changes no bit of the
// parameters, of state() or of a run resumed from state(), for fp32 and bf16 parameters; and that
// delayed updates (step_delayed) show each update one step late and end in the same state.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "llmrdzv/dist/chunk_pipeline.hpp"
#include "worker_launch.hpp"

using namespace llmrdzv::dist;
using namespace llmrdzv::testing;

TEST_CASE("chunk ranges cover the shard exactly, the last chunk short") {
  CHECK(chunk_count(4, 0) == 0);
  CHECK(chunk_count(4, 8) == 2);
  CHECK(chunk_count(4, 9) == 3);
  CHECK(chunk_count(100, 9) == 1);
  CHECK(chunk_range(2, 4, 9).begin == 8);
  CHECK(chunk_range(2, 4, 9).end == 9);
  CHECK(chunk_range(0, 100, 9).size() == 9);
}

TEST_CASE("chunk pipeline: downloads run one chunk ahead through alternating buffers") {
  for (std::int64_t chunks : {0, 1, 2, 5}) {
    INFO(chunks << " chunks");
    std::vector<std::string> events;
    std::map<int, std::int64_t> in_buffer;   // buffer -> chunk whose gradient it holds
    std::map<int, bool> landed;               // buffer -> download awaited since it started
    std::map<std::int64_t, bool> updated;
    const ChunkStages stages{
        .start_download =
            [&](std::int64_t chunk, int buffer) {
              // The buffer must no longer hold a gradient that still awaits its update.
              if (in_buffer.contains(buffer)) CHECK(updated[in_buffer[buffer]]);
              in_buffer[buffer] = chunk;
              landed[buffer] = false;
              events.push_back("D" + std::to_string(chunk) + "@" + std::to_string(buffer));
            },
        .wait_download =
            [&](int buffer) {
              landed[buffer] = true;
              events.push_back("W@" + std::to_string(buffer));
            },
        .update =
            [&](std::int64_t chunk, int buffer) {
              CHECK(in_buffer[buffer] == chunk);
              CHECK(landed[buffer]);
              updated[chunk] = true;
              events.push_back("U" + std::to_string(chunk));
            },
        .start_upload =
            [&](std::int64_t chunk, int buffer) {
              CHECK(updated[chunk]);
              CHECK(buffer == chunk % 2);
              events.push_back("H" + std::to_string(chunk));
            },
    };
    run_chunk_pipeline(chunks, stages);
    std::vector<std::string> expected;
    if (chunks > 0) expected.push_back("D0@0");
    for (std::int64_t i = 0; i < chunks; ++i) {
      const std::string buffer = std::to_string(i % 2);
      if (i + 1 < chunks) expected.push_back("D" + std::to_string(i + 1) + "@" + std::to_string((i + 1) % 2));
      expected.push_back("W@" + buffer);
      expected.push_back("U" + std::to_string(i));
      expected.push_back("H" + std::to_string(i));
    }
    CHECK(events == expected);
    CHECK(updated.size() == std::size_t(chunks));
  }
}

namespace {

struct BitsLine {
  int rank = -1;
  std::int64_t chunk = -1;
  std::string params, state, resumed, delayed, expected, delayed_state;
};

std::vector<BitsLine> parse_bits(const WorkerRun& run) {
  std::vector<BitsLine> lines;
  for (const auto& text : lines_with(run, "rank ")) {
    std::istringstream in(text);
    std::string word;
    BitsLine l;
    in >> word >> l.rank >> word >> l.chunk >> word >> l.params >> word >> l.state >> word >> l.resumed >> word >>
        l.delayed >> word >> l.expected >> word >> l.delayed_state;
    lines.push_back(l);
  }
  return lines;
}

}  // namespace

TEST_CASE("offload optimizer: chunked and delayed steps equal the unchunked step bit for bit, 1 to 3 ranks, fp32 and bf16 and fp16") {
  // The problem holds 7201 elements (parameters of 1, 37, 1000, 4097, 13 and 2053): 1 << 20 is
  // one chunk per shard (the unchunked step); 1, 7, 1000 and 1027 cut across parameters, decay
  // runs and the shard boundaries of 2 and 3 ranks. 0 is the plain fused AdamW, no offload.
  const std::vector<std::int64_t> chunks{0, 1 << 20, 1, 7, 1000, 1027};
  std::string chunk_list;
  for (auto c : chunks) chunk_list += (chunk_list.empty() ? "" : ",") + std::to_string(c);
  // fp16 takes the path of its own: a widened copy of each gradient chunk, the masters rounded after.
  for (const std::string dtype : {"f32", "bf16", "f16"}) {
    std::string reference;  // the parameters' hash, the same for every world size
    for (int world : {1, 2, 3}) {
      INFO(dtype << ", world " << world);
      const auto run = run_workers(world, {"--mode", "offload-bits", "--dtype", dtype, "--chunks", chunk_list});
      require_success(run);
      const auto lines = parse_bits(run);
      REQUIRE(lines.size() == chunks.size() * world);
      std::map<int, std::string> unchunked_state;  // per rank
      for (const auto& l : lines) {
        if (l.chunk == (1 << 20)) unchunked_state[l.rank] = l.state;
      }
      REQUIRE(unchunked_state.size() == std::size_t(world));
      if (reference.empty()) reference = lines.front().params;
      for (const auto& l : lines) {
        INFO("rank " << l.rank << ", chunk " << l.chunk);
        CHECK(l.params == reference);
        CHECK(l.resumed == reference);
        if (l.chunk == 0) continue;
        CHECK(l.state == unchunked_state[l.rank]);
        // Delayed updates: the parameters one step late, the same end state.
        CHECK(l.delayed == l.expected);
        CHECK(l.delayed_state == unchunked_state[l.rank]);
      }
    }
  }
}
