// The training corpus as the trainer sees it: --train_file / --validation_file name a text file, a
// .jsonl file or a folder, and this turns that into an ordered list of documents.
//  - A folder is read recursively in byte-wise path order; hidden entries (".name") are skipped,
//    and so are files whose first 8 KiB hold a NUL byte (binaries; listed in SourceList::skipped).
//  - A .jsonl file holds one JSON object per line whose "text" member (a string) is one document;
//    blank lines are skipped; any other line is an error naming file:line and the problem.
//  - Any other file is one document, its bytes as they are; or, with SourceFile::lines
//    (--keep_linebreaks false), each of its lines is one, without its line break: lines end at
//    "\n", "\r\n" or a lone "\r", as Python's universal newlines read them for run_clm.py's text
//    datasets. Empty documents are dropped.
//  - --validation_split_percentage p (1..99) puts document i (0-based over the whole list) in the
//    validation part when floor((i+1)p/100) > floor(i p/100): p% of the documents, spread evenly,
//    the same on every run and every rank.
// Documents reach the tokenizer in chunks cut only where its pre-tokeniser ends a piece whatever
// surrounds it (tokenizer::last_safe_cut with the tokenizer's rule and whitespace-absorbing added
// tokens; for GPT-2 a lone line break or a lone space between non-whitespace characters), so chunked encoding equals whole-document
// encoding while memory stays bounded by the chunk size. Text with no such place in 64 chunks'
// worth (one huge "word"; any SentencePiece-style text whose vocabulary has tokens that join "▁"
// to a character before it) is cut at a character boundary there; only such a cut can change the ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/tokenizer/safe_cut.hpp"

namespace llmrdzv::data {

// Bad corpora, caches and sampler settings; the message names the file (and line) and the problem.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SourceFile {
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  bool jsonl = false;
  bool lines = false;  // a plain file read a document per line, line breaks dropped
};

struct SourceList {
  std::vector<SourceFile> files;
  std::vector<std::filesystem::path> skipped;   // binary files left out of a folder
  std::vector<std::filesystem::path> excluded;  // folders of `not_corpus` found inside it
};

// Lists one input (file or folder). Throws DataError when it does not exist, cannot be read, or
// yields no files. Folders named in `not_corpus` (the run's own output directory and token cache,
// which a folder input may contain) are not entered, wherever they are reached from.
SourceList list_sources(const std::filesystem::path& input, const std::vector<std::filesystem::path>& not_corpus = {});

// Which documents of a source list a reader yields.
struct DocumentSelection {
  enum class Part { all, train, validation };
  Part part = Part::all;
  unsigned validation_percentage = 0;  // 1..99 with train/validation; ignored with all
};

// SHA-256 (hex) over every file's path, size and mtime plus the selection and the reader's
// format version: equal fingerprints mean the same documents.
std::string source_fingerprint(const SourceList& sources, const DocumentSelection& selection);

// Reads the selected documents in order, in chunks. Holds at most one chunk of text (plus one
// line of a .jsonl file) at a time.
class DocumentReader {
 public:
  struct Chunk {
    std::string_view text;      // valid until the next call
    bool ends_document = false;  // the last chunk of its document
  };

  DocumentReader(SourceList sources, DocumentSelection selection, std::size_t chunk_bytes = 1 << 20,
                 tokenizer::CutPlaces cut_places = tokenizer::CutRule::gpt2);
  ~DocumentReader();
  DocumentReader(DocumentReader&&) noexcept;
  DocumentReader& operator=(DocumentReader&&) noexcept;

  // The next chunk, or false at the end of the corpus. Throws DataError on unreadable files and
  // bad .jsonl lines.
  bool next(Chunk& chunk);

  // Where the last chunk came from, for messages: its file, and the line of a .jsonl file's
  // document (or of a plain file read a document per line).
  struct Position {
    std::filesystem::path file;
    std::uint64_t jsonl_line = 0;  // 0: a plain file read whole
  };
  Position position() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace llmrdzv::data
