// The text column of a dataset split's files (dataset_files.hpp), read through the trainer's Arrow
// reader module (arrow_text_abi.hpp, loaded on first use) into one buffer: a 500 MB split is one
// allocation of its text plus 8 bytes a row, not a string object per row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/datasets/dataset_files.hpp"

namespace llmrdzv::datasets {

struct TextRows {
  std::string column;               // the column read
  std::string bytes;                // the rows back to back
  std::vector<std::uint64_t> ends;  // row i is bytes[ends[i - 1], ends[i])
  std::size_t size() const { return ends.size(); }
  std::string_view row(std::size_t i) const {
    const std::uint64_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(bytes).substr(begin, ends[i] - begin);
  }
};

// The rows of column `column` of `files`, in order; an empty `column` is run_clm.py's rule ("text"
// when the first file has it, else its first column), and every file must have that column.
// Throws DatasetError naming the file and the problem (not a string column, a null row, a damaged
// or truncated file, the module missing).
TextRows read_text_rows(const std::vector<std::filesystem::path>& files, FileFormat format, const std::string& column);

// "Apache Arrow 26.0.1 (module path)", for the run log; loads the module.
std::string arrow_reader_version();

}  // namespace llmrdzv::datasets
