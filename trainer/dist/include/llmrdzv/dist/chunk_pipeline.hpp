// The schedule of OffloadAdamW's chunked step, kept apart from tensors and streams so tests can
// watch its order: the owned shard is cut into chunks, and while the host updates chunk i, chunk
// i+1's gradient is already on its way from the device into the other of two staging buffers
// and chunk i-1's new weights on their way back. With asynchronous copies (CUDA) the transfers
// hide behind the update; with synchronous ones (the CPU) the same order simply runs in turn.
#pragma once

#include <cstdint>
#include <functional>

namespace llmrdzv::dist {

// The half-open element range [begin, end) of one chunk.
struct ChunkRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

// Chunk `index` of `chunk_size` elements over [0, total); the last one may be shorter.
ChunkRange chunk_range(std::int64_t index, std::int64_t chunk_size, std::int64_t total);
// How many chunks of `chunk_size` (> 0) cover `total` (>= 0) elements.
std::int64_t chunk_count(std::int64_t chunk_size, std::int64_t total);

// What one step does to a chunk; `buffer` (0 or 1) names the staging buffer it travels in.
struct ChunkStages {
  // Starts moving chunk's gradient from the device into staging buffer `buffer`.
  std::function<void(std::int64_t chunk, int buffer)> start_download;
  // Returns once the download into `buffer` has landed.
  std::function<void(int buffer)> wait_download;
  // Updates chunk's master weights and moments on the host from staging buffer `buffer`.
  std::function<void(std::int64_t chunk, int buffer)> update;
  // Starts moving chunk's new weights to the device, through upload buffer `buffer`.
  std::function<void(std::int64_t chunk, int buffer)> start_upload;
};

// Runs chunks [0, chunks) through download, update and upload with two staging buffers each way:
// chunk i uses download and upload buffer i % 2, and chunk i+1's download starts before chunk i's update (its buffer was
// freed by chunk i-1's update, which has returned). Uploads are started, never awaited: the
// caller orders the device's later work after them.
void run_chunk_pipeline(std::int64_t chunks, const ChunkStages& stages);

}  // namespace llmrdzv::dist
