// Corpus listing, fingerprinting and chunked document reading (see corpus.hpp for the rules).
#include "llmrdzv/data/corpus.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <chrono>
#include <optional>
#include <map>
#include <system_error>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/tokenizer/safe_cut.hpp"
#include "llmrdzv/io/sha256.hpp"

namespace llmrdzv::data {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kBinaryProbeBytes = 8192;
constexpr std::string_view kReaderFormat = "llmrdzv-corpus v1";

bool is_hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name.front() == '.';
}

bool has_nul_prefix(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw DataError(p.string() + ": cannot open: " + std::strerror(errno));
  char buffer[kBinaryProbeBytes];
  in.read(buffer, sizeof buffer);
  return std::memchr(buffer, '\0', static_cast<std::size_t>(in.gcount())) != nullptr;
}

SourceFile describe(const fs::path& p) {
  std::error_code ec;
  SourceFile file;
  file.path = p;
  file.size = fs::file_size(p, ec);
  if (ec) throw DataError(p.string() + ": cannot read its size: " + ec.message());
  const auto mtime = fs::last_write_time(p, ec);
  if (ec) throw DataError(p.string() + ": cannot read its modification time: " + ec.message());
  file.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  // As run_clm.py's data files: .json and .jsonl are JSON Lines. A CSV file would be trained on
  // with its commas, quotes and header; it is refused rather than read as text.
  const std::string extension = p.extension().string();
  if (extension == ".csv" || extension == ".tsv") {
    throw DataError(p.string() + ": CSV files are not read; give the text as plain text files or as JSON Lines "
                    "(.jsonl or .json, one {\"text\": ...} object per line)");
  }
  file.jsonl = extension == ".jsonl" || extension == ".json";
  return file;
}

// The device and inode a path leads to (through symbolic links), if it can be read.
std::optional<std::pair<dev_t, ino_t>> identity(const fs::path& p) {
  struct stat info {};
  if (::stat(p.c_str(), &info) != 0) return std::nullopt;
  return std::pair{info.st_dev, info.st_ino};
}

// The documents a folder holds, recursively, skipping hidden entries and binaries. Symbolic links
// are followed, but a link back to a folder above (a cycle) is not entered, and a file reached
// through several paths is read once, under the first of them in path order.
SourceList list_folder(const fs::path& dir, const std::vector<fs::path>& not_corpus) {
  SourceList list;
  std::vector<std::pair<dev_t, ino_t>> excluded_ids;
  std::vector<fs::path> excluded_paths;  // also by name: a folder made after the listing began
  for (const fs::path& p : not_corpus) {
    if (p.empty()) continue;
    if (const auto id = identity(p)) excluded_ids.push_back(*id);
    excluded_paths.push_back(fs::absolute(p).lexically_normal());
  }
  std::map<std::pair<dev_t, ino_t>, fs::path> found;
  std::vector<std::pair<dev_t, ino_t>> ancestors;  // the folders above the current entry
  if (const auto root = identity(dir)) ancestors.push_back(*root);
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  if (ec) throw DataError(dir.string() + ": cannot list: " + ec.message());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) throw DataError(dir.string() + ": cannot list: " + ec.message());
    const fs::path& entry = it->path();
    const bool directory = it->is_directory(ec);
    if (is_hidden(entry)) {
      if (directory) it.disable_recursion_pending();
      continue;
    }
    if (!directory && !it->is_regular_file(ec)) continue;
    const auto id = identity(entry);
    if (!id) continue;  // vanished, or a link to nothing
    if (directory && (std::ranges::find(excluded_ids, *id) != excluded_ids.end() ||
                      std::ranges::find(excluded_paths, entry.lexically_normal()) != excluded_paths.end())) {
      it.disable_recursion_pending();
      list.excluded.push_back(entry);
      continue;
    }
    if (directory) {
      ancestors.resize(std::min(ancestors.size(), static_cast<std::size_t>(it.depth()) + 1));
      if (std::ranges::find(ancestors, *id) != ancestors.end()) {
        it.disable_recursion_pending();
        continue;
      }
      ancestors.push_back(*id);
      continue;
    }
    const auto [at, added] = found.emplace(*id, entry);
    if (!added && entry.native() < at->second.native()) at->second = entry;
  }
  if (ec) throw DataError(dir.string() + ": cannot list: " + ec.message());
  const auto in_path_order = [](const fs::path& a, const fs::path& b) { return a.native() < b.native(); };
  std::sort(list.excluded.begin(), list.excluded.end(), in_path_order);
  std::vector<fs::path> paths;
  for (auto& [id, path] : found) paths.push_back(std::move(path));
  std::sort(paths.begin(), paths.end(), in_path_order);
  for (const fs::path& p : paths) {
    if (has_nul_prefix(p)) {
      list.skipped.push_back(p);
    } else {
      list.files.push_back(describe(p));
    }
  }
  if (list.files.empty()) {
    throw DataError(dir.string() + ": holds no text files" +
                    (list.skipped.empty() ? std::string() : " (" + std::to_string(list.skipped.size()) +
                                                               " binary files skipped)"));
  }
  return list;
}

bool in_validation(std::uint64_t index, unsigned percentage) {
  return (index + 1) * percentage / 100 > index * percentage / 100;
}

// A document with no safe cut in this many chunks' worth of text (one huge "word": minified
// code, text without spaces or line breaks) is cut at the last character boundary instead, so
// memory stays bounded; only there can ids differ from whole-document encoding.
constexpr std::size_t kForcedCutChunks = 64;

}  // namespace

SourceList list_sources(const fs::path& input, const std::vector<fs::path>& not_corpus) {
  if (input.empty()) throw DataError("no input file or folder given");
  std::error_code ec;
  const fs::file_status status = fs::status(input, ec);
  if (ec || !fs::exists(status)) {
    throw DataError(input.string() + ": " + (ec ? ec.message() : "no such file or directory"));
  }
  const fs::path absolute = fs::absolute(input).lexically_normal();
  if (fs::is_directory(status)) return list_folder(absolute, not_corpus);
  if (!fs::is_regular_file(status)) throw DataError(input.string() + ": not a regular file or folder");
  // Named directly, a binary file is an error, not a skip: training on it would "work" on bytes
  // that are no text at all.
  if (has_nul_prefix(absolute)) {
    throw DataError(input.string() + ": looks like a binary file (a NUL byte in its first " +
                    std::to_string(kBinaryProbeBytes / 1024) + " KiB), not text: give a text file, a .jsonl file or a folder");
  }
  SourceList list;
  list.files.push_back(describe(absolute));
  return list;
}

std::string source_fingerprint(const SourceList& sources, const DocumentSelection& selection) {
  io::Sha256 hash;
  hash.update(kReaderFormat).update_u64(sources.files.size());
  for (const SourceFile& file : sources.files) {
    const std::string path = file.path.string();
    hash.update_u64(path.size()).update(path).update_u64(file.size);
    hash.update_u64(static_cast<std::uint64_t>(file.mtime_ns)).update_u64(file.jsonl ? 1 : (file.lines ? 2 : 0));
  }
  const unsigned percentage = selection.part == DocumentSelection::Part::all ? 0 : selection.validation_percentage;
  hash.update_u64(static_cast<std::uint64_t>(selection.part)).update_u64(percentage);
  return hash.hex_digest();
}

struct DocumentReader::State {
  SourceList sources;
  DocumentSelection selection;
  std::size_t chunk_bytes;
  tokenizer::CutPlaces cut_places;

  std::size_t file_index = 0;  // the next file to open
  std::ifstream file;
  bool file_open = false;
  std::uint64_t line_number = 0;  // .jsonl, or a plain file read a document per line
  std::uint64_t document_index = 0;  // over non-empty documents

  // The current plain-file document: buffer holds [consumed, size) unread-by-caller text.
  bool in_document = false;
  bool document_started = false;
  std::string buffer;
  std::size_t consumed = 0;
  std::string line;  // the current .jsonl line's text member, or the current line of a plain file
  std::string raw_line;  // a plain file's line up to "\n", cut at lone "\r"s from raw_from on
  std::size_t raw_from = std::string::npos;

  const SourceFile& current() const { return sources.files[file_index - 1]; }

  bool selected(std::uint64_t index) const {
    switch (selection.part) {
      case DocumentSelection::Part::all:
        return true;
      case DocumentSelection::Part::validation:
        return in_validation(index, selection.validation_percentage);
      case DocumentSelection::Part::train:
        return !in_validation(index, selection.validation_percentage);
    }
    return true;
  }

  [[noreturn]] void fail_read() const {
    throw DataError(current().path.string() + ": read failed: " + std::strerror(errno));
  }

  bool open_next_file() {
    if (file_index == sources.files.size()) return false;
    const SourceFile& next = sources.files[file_index++];
    file = std::ifstream(next.path, std::ios::binary);
    if (!file) throw DataError(next.path.string() + ": cannot open: " + std::strerror(errno));
    file_open = true;
    line_number = 0;
    raw_from = std::string::npos;
    return true;
  }

  // Reads up to n more bytes of the plain file into buffer; returns how many arrived.
  std::size_t read_more(std::size_t n) {
    const std::size_t old = buffer.size();
    buffer.resize(old + n);
    file.read(buffer.data() + old, static_cast<std::streamsize>(n));
    if (file.bad()) fail_read();
    const auto got = static_cast<std::size_t>(file.gcount());
    buffer.resize(old + got);
    return got;
  }

  // The next .jsonl document's text into `line`; false at the end of the file.
  bool next_jsonl_document() {
    std::string raw;
    while (std::getline(file, raw)) {
      ++line_number;
      if (raw.find_first_not_of(" \t\r") == std::string::npos) continue;
      line = parse_jsonl_line(raw);
      return true;
    }
    if (file.bad()) fail_read();
    return false;
  }

  // The next line of a plain file read a document per line into `line`, its break dropped: a
  // getline() line ends at "\n", and a "\r" in it ends a line too ("\r\n" leaves an empty one,
  // which is dropped as every empty document is); false at the end of the file.
  bool next_text_line() {
    if (raw_from == std::string::npos) {
      if (!std::getline(file, raw_line)) {
        if (file.bad()) fail_read();
        return false;
      }
      ++line_number;
      raw_from = 0;
    }
    const std::size_t end = raw_line.find('\r', raw_from);
    line.assign(raw_line, raw_from, end == std::string::npos ? std::string::npos : end - raw_from);
    raw_from = end == std::string::npos ? std::string::npos : end + 1;
    return true;
  }

  std::string parse_jsonl_line(std::string_view raw) const {
    const std::string where = current().path.string() + ":" + std::to_string(line_number) + ": ";
    const std::string hint = current().path.extension() == ".json"
                                 ? " (a .json file is read as JSON Lines: one {\"text\": ...} object per line)"
                                 : "";
    json::Value record;
    try {
      record = json::parse(raw);
    } catch (const json::ParseError& e) {
      throw DataError(where + "not a JSON object (" + e.what() + " at column " + std::to_string(e.offset() + 1) + ")" + hint);
    }
    if (!record.is_object()) throw DataError(where + "not a JSON object (a " + std::string(record.kind_name()) + ")" + hint);
    const json::Value* text = record.find("text");
    if (!text) throw DataError(where + "the object has no \"text\" member");
    if (!text->is_string()) throw DataError(where + "the \"text\" member is not a string");
    return text->as_string();
  }

  bool next(Chunk& chunk) {
    for (;;) {
      if (in_document) {
        buffer.erase(0, consumed);
        consumed = 0;
        emit_plain(chunk);
        return true;
      }
      if (!file_open && !open_next_file()) return false;
      if (current().jsonl || current().lines) {
        if (!(current().jsonl ? next_jsonl_document() : next_text_line())) {
          file_open = false;
          continue;
        }
        if (line.empty()) continue;
        if (!selected(document_index++)) continue;
        chunk.text = line;
        chunk.ends_document = true;
        return true;
      }
      // A plain file is one document; an empty one is dropped without an index.
      file_open = false;
      buffer.clear();
      consumed = 0;
      if (read_more(chunk_bytes) == 0) continue;
      if (!selected(document_index++)) continue;
      in_document = true;
      emit_plain(chunk);
      return true;
    }
  }

  // Emits the next chunk of the current plain document from buffer (reading more as needed).
  void emit_plain(Chunk& chunk) {
    std::size_t want = chunk_bytes;
    for (;;) {
      if (buffer.size() < want) {
        const std::size_t missing = want - buffer.size();
        if (read_more(missing) < missing) {  // end of file: the rest is the last chunk
          in_document = false;
          chunk.text = buffer;
          chunk.ends_document = true;
          consumed = buffer.size();
          return;
        }
      }
      std::size_t cut = tokenizer::last_safe_cut(buffer, cut_places);
      if (cut == 0 && buffer.size() >= chunk_bytes * kForcedCutChunks) cut = tokenizer::last_character_boundary(buffer);
      if (cut > 0) {
        chunk.text = std::string_view(buffer).substr(0, cut);
        chunk.ends_document = false;
        consumed = cut;
        return;
      }
      want = buffer.size() * 2;  // no safe cut yet: a longer chunk
    }
  }
};

DocumentReader::DocumentReader(SourceList sources, DocumentSelection selection, std::size_t chunk_bytes,
                               tokenizer::CutPlaces cut_places)
    : state_(std::make_unique<State>()) {
  if (selection.part != DocumentSelection::Part::all &&
      (selection.validation_percentage < 1 || selection.validation_percentage > 99)) {
    throw DataError("validation_split_percentage must be between 1 and 99, got " +
                    std::to_string(selection.validation_percentage));
  }
  state_->sources = std::move(sources);
  state_->selection = selection;
  state_->chunk_bytes = std::max<std::size_t>(chunk_bytes, 64);
  state_->cut_places = std::move(cut_places);
}

DocumentReader::~DocumentReader() = default;
DocumentReader::DocumentReader(DocumentReader&&) noexcept = default;
DocumentReader& DocumentReader::operator=(DocumentReader&&) noexcept = default;

bool DocumentReader::next(Chunk& chunk) { return state_->next(chunk); }

DocumentReader::Position DocumentReader::position() const {
  if (state_->file_index == 0) return {};
  const SourceFile& file = state_->current();
  return {file.path, file.jsonl || file.lines ? state_->line_number : 0};
}

}  // namespace llmrdzv::data
