// The chunk schedule of the offloaded optimizer step (see chunk_pipeline.hpp).
#include "llmrdzv/dist/chunk_pipeline.hpp"

#include <algorithm>

namespace llmrdzv::dist {

ChunkRange chunk_range(std::int64_t index, std::int64_t chunk_size, std::int64_t total) {
  const std::int64_t begin = std::min(total, index * chunk_size);
  return {begin, std::min(total, begin + chunk_size)};
}

std::int64_t chunk_count(std::int64_t chunk_size, std::int64_t total) {
  return (total + chunk_size - 1) / chunk_size;
}

void run_chunk_pipeline(std::int64_t chunks, const ChunkStages& stages) {
  if (chunks > 0) stages.start_download(0, 0);
  for (std::int64_t i = 0; i < chunks; ++i) {
    const int buffer = static_cast<int>(i % 2);
    if (i + 1 < chunks) stages.start_download(i + 1, 1 - buffer);
    stages.wait_download(buffer);
    stages.update(i, buffer);
    stages.start_upload(i, buffer);
  }
}

}  // namespace llmrdzv::dist
