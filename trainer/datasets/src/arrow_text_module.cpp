// The Arrow reader module (arrow_text_abi.hpp): one string column of a parquet file or an Arrow
// IPC stream, read through Apache Arrow C++ and handed over row by row. Everything Arrow throws or
// returns becomes one message naming the file.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/util/config.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "arrow_text_abi.hpp"

namespace {

struct ReadError {
  std::string message;
};

void copy_out(const std::string& text, char* out, std::size_t size) {
  if (size == 0) return;
  const std::size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

template <class T>
T check(arrow::Result<T> result, const std::string& what) {
  if (!result.ok()) throw ReadError{what + ": " + result.status().ToString()};
  return std::move(result).ValueUnsafe();
}

void check(const arrow::Status& status, const std::string& what) {
  if (!status.ok()) throw ReadError{what + ": " + status.ToString()};
}

// The field to read: `wanted`, else "text", else the first (run_clm.py's rule).
int choose_field(const arrow::Schema& schema, const std::string& wanted, const std::string& file) {
  if (schema.num_fields() == 0) throw ReadError{"'" + file + "' has no columns"};
  if (!wanted.empty()) {
    const int index = schema.GetFieldIndex(wanted);
    if (index < 0) {
      std::string names;
      for (const auto& field : schema.fields()) names += (names.empty() ? "" : ", ") + field->name();
      throw ReadError{"'" + file + "' has no column '" + wanted + "' (its columns: " + names + ")"};
    }
    return index;
  }
  const int text = schema.GetFieldIndex("text");
  return text >= 0 ? text : 0;
}

void require_strings(const arrow::Field& field, const std::string& file) {
  const arrow::Type::type id = field.type()->id();
  if (id != arrow::Type::STRING && id != arrow::Type::LARGE_STRING && id != arrow::Type::STRING_VIEW) {
    throw ReadError{"'" + file + "': column '" + field.name() + "' holds " + field.type()->ToString() +
                    ", not text (give --text_column_name with a string column)"};
  }
}

struct Sink {
  LlmrdzvTextRow row;
  void* context;
  std::int64_t rows = 0;  // rows handed over so far in this file, for messages
  bool stopped = false;
};

template <class ArrayType>
void emit_strings(const ArrayType& array, Sink& sink, const std::string& file, const std::string& column) {
  for (std::int64_t i = 0; i < array.length() && !sink.stopped; ++i, ++sink.rows) {
    if (array.IsNull(i)) {
      throw ReadError{"'" + file + "': row " + std::to_string(sink.rows) + " of column '" + column + "' is null"};
    }
    const std::string_view value = array.GetView(i);
    sink.stopped = sink.row(sink.context, value.data(), value.size()) != 0;
  }
}

void emit(const arrow::Array& array, Sink& sink, const std::string& file, const std::string& column) {
  switch (array.type_id()) {
    case arrow::Type::STRING: return emit_strings(static_cast<const arrow::StringArray&>(array), sink, file, column);
    case arrow::Type::LARGE_STRING:
      return emit_strings(static_cast<const arrow::LargeStringArray&>(array), sink, file, column);
    case arrow::Type::STRING_VIEW:
      return emit_strings(static_cast<const arrow::StringViewArray&>(array), sink, file, column);
    default: throw ReadError{"'" + file + "': column '" + column + "' holds " + array.type()->ToString() + ", not text"};
  }
}

std::string read_parquet(const std::string& path, const std::string& wanted, Sink& sink) {
  const auto input = check(arrow::io::ReadableFile::Open(path), "'" + path + "' cannot be opened");
  std::unique_ptr<parquet::arrow::FileReader> reader =
      check(parquet::arrow::OpenFile(input, arrow::default_memory_pool()), "'" + path + "' is not a readable parquet file");
  std::shared_ptr<arrow::Schema> schema;
  check(reader->GetSchema(&schema), "'" + path + "': its parquet schema cannot be read as Arrow");
  const int field = choose_field(*schema, wanted, path);
  require_strings(*schema->field(field), path);
  for (int group = 0; group < reader->num_row_groups() && !sink.stopped; ++group) {
    std::shared_ptr<arrow::ChunkedArray> chunks;
    check(reader->RowGroup(group)->Column(field)->Read(&chunks),
          "'" + path + "': row group " + std::to_string(group) + " of column '" + schema->field(field)->name() + "' is damaged");
    for (const auto& chunk : chunks->chunks()) {
      check(chunk->ValidateFull(), "'" + path + "': row group " + std::to_string(group) + " is damaged");
      emit(*chunk, sink, path, schema->field(field)->name());
    }
  }
  return schema->field(field)->name();
}

std::string read_ipc_stream(const std::string& path, const std::string& wanted, Sink& sink) {
  const auto input = check(arrow::io::ReadableFile::Open(path), "'" + path + "' cannot be opened");
  const auto reader = check(arrow::ipc::RecordBatchStreamReader::Open(input), "'" + path + "' is not an Arrow IPC stream");
  const std::shared_ptr<arrow::Schema> schema = reader->schema();
  const int field = choose_field(*schema, wanted, path);
  require_strings(*schema->field(field), path);
  while (!sink.stopped) {
    std::shared_ptr<arrow::RecordBatch> batch;
    check(reader->ReadNext(&batch), "'" + path + "': damaged Arrow IPC stream after " + std::to_string(sink.rows) + " rows");
    if (!batch) break;
    // An IPC stream's buffers are taken as they are: offsets past the data would be read as they
    // stand. Validated first, a damaged batch is an error, not a read out of bounds.
    check(batch->column(field)->ValidateFull(),
          "'" + path + "': damaged Arrow IPC stream after " + std::to_string(sink.rows) + " rows");
    emit(*batch->column(field), sink, path, schema->field(field)->name());
  }
  return schema->field(field)->name();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int llmrdzv_read_text_column(
    const char* path, int parquet, const char* column, char* column_used, std::size_t column_used_size,
    LlmrdzvTextRow row, void* context, char* error, std::size_t error_size) {
  try {
    Sink sink{row, context};
    const std::string used = parquet ? read_parquet(path, column, sink) : read_ipc_stream(path, column, sink);
    copy_out(used, column_used, column_used_size);
    return 0;
  } catch (const ReadError& e) {
    copy_out(e.message, error, error_size);
  } catch (const std::exception& e) {  // parquet::ParquetException and the standard library's
    copy_out("'" + std::string(path) + "': " + e.what(), error, error_size);
  }
  return 1;
}

extern "C" __attribute__((visibility("default"))) const char* llmrdzv_arrow_version() {
  static const std::string version = "Apache Arrow " + std::string(ARROW_VERSION_STRING);
  return version.c_str();
}
