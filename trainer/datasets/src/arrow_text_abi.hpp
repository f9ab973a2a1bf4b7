// The C interface between the trainer and its Arrow reader module (arrow_text_module.cpp), which
// alone links Apache Arrow C++ from the pyarrow wheel. The trainer dlopen()s the module only for
// --dataset_name, with RTLD_LOCAL: libarrow's 20,000 exported symbols (its bundled OpenTelemetry,
// abseil and simdjson among them) never enter the trainer's symbol scope next to LibTorch's and
// gRPC's, and a trainer installed without the pyarrow wheel runs everything else.
#pragma once

#include <cstddef>

extern "C" {

// Receives the rows of the column being read, in order; `data` is valid during the call only.
// Returns 0 to go on, anything else to stop reading.
using LlmrdzvTextRow = int (*)(void* context, const char* data, std::size_t size);

// Reads the string column `column` of one file (`parquet` 1: a parquet file, 0: an Arrow IPC
// stream as datasets writes its cache and save_to_disk files). An empty `column` is run_clm.py's
// rule: "text" when the file has it, else the first column. The column read is copied into
// `column_used`. Returns 0, or 1 with a NUL-terminated message (file and problem) in `error`.
int llmrdzv_read_text_column(const char* path, int parquet, const char* column, char* column_used,
                             std::size_t column_used_size, LlmrdzvTextRow row, void* context, char* error,
                             std::size_t error_size);

// "Apache Arrow <version>", for the run log.
const char* llmrdzv_arrow_version();

// The exported names, for dlsym.
inline constexpr const char* kReadTextColumnSymbol = "llmrdzv_read_text_column";
inline constexpr const char* kArrowVersionSymbol = "llmrdzv_arrow_version";
}
