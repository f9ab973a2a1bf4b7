// Loads the Arrow reader module (arrow_text_abi.hpp) and collects a split's rows (text_rows.hpp).
#include "llmrdzv/datasets/text_rows.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "arrow_text_abi.hpp"

namespace llmrdzv::datasets {
namespace {

struct Module {
  std::string path;
  decltype(&llmrdzv_read_text_column) read = nullptr;
  decltype(&llmrdzv_arrow_version) version = nullptr;
};

// $LLMRDZV_ARROW_READER, else the module this build made. Loaded once; RTLD_LOCAL keeps its
// symbols (and libarrow's) to itself.
const Module& module() {
  static std::once_flag once;
  static Module loaded;
  static std::string failure;
  std::call_once(once, [] {
    const char* override_path = std::getenv("LLMRDZV_ARROW_READER");
    loaded.path = override_path && *override_path ? override_path : LLMRDZV_ARROW_READER_PATH;
    if (loaded.path.empty()) {
      failure = "--dataset_name needs the trainer's Arrow reader module, which this build lacks (it was configured "
                "without the pyarrow wheel); set LLMRDZV_ARROW_READER to one";
      return;
    }
    void* handle = ::dlopen(loaded.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = ::dlerror();
      failure = "--dataset_name needs the trainer's Arrow reader module '" + loaded.path +
                "' (Apache Arrow C++ from the pyarrow wheel, built with the trainer): " + (why ? why : "dlopen failed") +
                " (an installed trainer takes " LLMRDZV_ARROW_SONAME " from the pyarrow==" LLMRDZV_PYARROW_VERSION
                " wheel in its torch_site environment: see trainer(1))";
      return;
    }
    loaded.read = reinterpret_cast<decltype(&llmrdzv_read_text_column)>(::dlsym(handle, kReadTextColumnSymbol));
    loaded.version = reinterpret_cast<decltype(&llmrdzv_arrow_version)>(::dlsym(handle, kArrowVersionSymbol));
    if (!loaded.read || !loaded.version) failure = "'" + loaded.path + "' is not the trainer's Arrow reader module";
  });
  if (!failure.empty()) throw DatasetError(failure);
  return loaded;
}

int append_row(void* context, const char* data, std::size_t size) {
  auto& rows = *static_cast<TextRows*>(context);
  rows.bytes.append(data, size);
  rows.ends.push_back(rows.bytes.size());
  return 0;
}

}  // namespace

TextRows read_text_rows(const std::vector<std::filesystem::path>& files, FileFormat format, const std::string& column) {
  const Module& reader = module();
  TextRows rows;
  rows.column = column;
  for (const auto& file : files) {
    char used[256] = {};
    char error[2048] = {};
    if (reader.read(file.c_str(), format == FileFormat::parquet ? 1 : 0, rows.column.c_str(), used, sizeof used, append_row,
                    &rows, error, sizeof error) != 0) {
      throw DatasetError(error);
    }
    rows.column = used;  // the first file's choice holds for the others
  }
  return rows;
}

std::string arrow_reader_version() {
  const Module& reader = module();
  return std::string(reader.version()) + " (" + reader.path + ")";
}

}  // namespace llmrdzv::datasets
