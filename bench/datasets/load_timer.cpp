// dataset-load-timer DATASET [CONFIG]: finds a --dataset_name offline and reads every split's text
// column as the trainer does (llmrdzv::datasets), then prints one JSON line: seconds, rows, bytes.
// The timed side of dataset_load_bench.py.
#include <chrono>
#include <cstdio>
#include <exception>

#include "llmrdzv/datasets/dataset_files.hpp"
#include "llmrdzv/datasets/text_rows.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dataset-load-timer DATASET [CONFIG]\n");
    return 2;
  }
  try {
    namespace ds = llmrdzv::datasets;
    ds::arrow_reader_version();  // load the module outside the timing, as a run loads it once
    const auto start = std::chrono::steady_clock::now();
    const ds::DatasetFiles found = ds::find_dataset({argv[1], argc > 2 ? argv[2] : "", "main", ""});
    std::size_t rows = 0;
    std::size_t bytes = 0;
    for (const auto& [split, files] : found.splits) {
      const ds::TextRows read = ds::read_text_rows(files, found.format, "");
      rows += read.size();
      bytes += read.bytes.size();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"seconds\": %.6f, \"rows\": %zu, \"bytes\": %zu}\n", seconds, rows, bytes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dataset-load-timer: %s\n", e.what());
    return 1;
  }
  return 0;
}
