// Corpus listing (folders, hidden and binary files), .jsonl documents and their errors, text
// files read a document per line (--keep_linebreaks false, against the datasets library's text
// builder), the validation split, chunk cutting and source fingerprints.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/tokenizer/safe_cut.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv::data;
using llmrdzv::testing::ScratchDir;

namespace {

struct Document {
  std::string text;
  std::size_t chunks = 0;
};

std::vector<Document> read_all(const SourceList& sources, DocumentSelection selection = {}, std::size_t chunk = 1 << 20) {
  DocumentReader reader(sources, selection, chunk);
  std::vector<Document> docs;
  DocumentReader::Chunk c;
  bool open = false;
  while (reader.next(c)) {
    if (!open) docs.emplace_back();
    docs.back().text += c.text;
    ++docs.back().chunks;
    open = !c.ends_document;
  }
  REQUIRE_FALSE(open);
  return docs;
}

std::vector<std::string> texts(const std::vector<Document>& docs) {
  std::vector<std::string> out;
  for (const auto& d : docs) out.push_back(d.text);
  return out;
}

}  // namespace

TEST_CASE("a folder is read recursively in path order, skipping hidden entries and binaries") {
  ScratchDir dir("corpus");
  dir.write("b.txt", "second");
  dir.write("a/z.txt", "first");
  dir.write("c/d/e.rst.txt", "third");
  dir.write(".hidden.txt", "hidden file");
  dir.write(".git/config", "hidden folder");
  dir.write("image.png", std::string("\x89PNG\r\n\x1a\n\0\0\0", 11));
  dir.write("empty.txt", "");

  const SourceList sources = list_sources(dir.path());
  REQUIRE(sources.files.size() == 4);
  CHECK(sources.files[0].path.filename() == "z.txt");
  CHECK(sources.files[1].path.filename() == "b.txt");
  CHECK(sources.files[2].path.filename() == "e.rst.txt");
  CHECK(sources.files[3].path.filename() == "empty.txt");
  REQUIRE(sources.skipped.size() == 1);
  CHECK(sources.skipped[0].filename() == "image.png");
  CHECK(texts(read_all(sources)) == std::vector<std::string>{"first", "second", "third"});
}

TEST_CASE("symbolic links in a folder: a cycle is not followed, a file linked twice is read once") {
  ScratchDir dir("corpus-links");
  dir.write("a.txt", "alpha");
  dir.write("sub/b.txt", "beta");
  std::filesystem::create_directory_symlink(".", dir / "self");         // a cycle
  std::filesystem::create_directory_symlink("..", dir / "sub" / "up");  // a cycle through the parent
  std::filesystem::create_symlink("a.txt", dir / "z-link.txt");         // the same file again
  const SourceList sources = list_sources(dir.path());
  REQUIRE(sources.files.size() == 2);  // the cycle used to read a.txt once per level, ~40 times
  CHECK(sources.files[0].path == dir / "a.txt");
  CHECK(sources.files[1].path == dir / "sub" / "b.txt");
  CHECK(texts(read_all(sources)) == std::vector<std::string>{"alpha", "beta"});
}

TEST_CASE("a run's own folders inside a corpus folder are not read as text, however they are reached") {
  ScratchDir dir("corpus-own");
  dir.write("a.txt", "alpha");
  dir.write("run/metrics.jsonl", "{\"step\": 1, \"loss\": 3.5}\n");  // would be a .jsonl without "text"
  dir.write("run/token-cache/x.txt", "cached");
  dir.write("cache/y.txt", "cache");
  std::filesystem::create_directory_symlink("run", dir / "z-run-link");  // the output dir by another name
  const SourceList sources = list_sources(dir.path(), {dir / "run", dir.path() / "cache", dir / "not-made-yet"});
  REQUIRE(sources.files.size() == 1);
  CHECK(sources.files[0].path == dir / "a.txt");
  CHECK(sources.excluded == std::vector<std::filesystem::path>{dir / "cache", dir / "run", dir / "z-run-link"});
  // Without them, all of it is read (the link's files once), and the metrics line would end the run.
  CHECK(list_sources(dir.path()).files.size() == 4);
  dir.write("not-made-yet/later.txt", "later");  // excluded by name as well
  CHECK(list_sources(dir.path(), {dir / "not-made-yet"}).excluded == std::vector<std::filesystem::path>{dir / "not-made-yet"});
}

TEST_CASE("missing inputs and folders without text are errors naming the path") {
  ScratchDir dir("corpus");
  CHECK_THROWS_WITH(list_sources(dir / "nope.txt"), Catch::Contains("nope.txt") && Catch::Contains("no such file", Catch::CaseSensitive::No));
  CHECK_THROWS_WITH(list_sources(dir.path()), Catch::Contains(dir.path().string()) && Catch::Contains("no text files"));
  dir.write("bin.dat", std::string("\0\1\2", 3));
  CHECK_THROWS_WITH(list_sources(dir.path()), Catch::Contains("1 binary files skipped"));
  CHECK_THROWS_WITH(list_sources(""), Catch::Contains("no input"));
  // Named directly, a binary file is refused (in a folder it is skipped).
  CHECK_THROWS_WITH(list_sources(dir / "bin.dat"),
                    Catch::Contains("bin.dat: looks like a binary file (a NUL byte in its first 8 KiB), not text"));
}

TEST_CASE(".jsonl lines give the text member of each object, and blank lines are skipped") {
  ScratchDir dir("corpus");
  const auto file = dir.write("docs.jsonl",
                              "{\"id\": 1, \"text\": \"hello\\nworld\", \"meta\": {\"a\": [1, 2, {\"b\": null}]}}\n"
                              "\n"
                              "   \n"
                              "{\"text\": \"caf\\u00e9 \\ud83d\\ude00\"}\n"
                              "{\"text\": \"\"}\n"
                              "{\"meta\": \"x\", \"text\": \"last\"}");
  const SourceList sources = list_sources(file);
  REQUIRE(sources.files.size() == 1);
  CHECK(sources.files[0].jsonl);
  CHECK(texts(read_all(sources)) == std::vector<std::string>{"hello\nworld", "caf\xc3\xa9 \xf0\x9f\x98\x80", "last"});
}

TEST_CASE("a text file read a document per line: its lines without their breaks, as datasets' text builder reads them") {
  ScratchDir dir("corpus");
  // "\n", "\r\n" and lone "\r" breaks, empty lines, spaces kept, no break at the end.
  const auto file = dir.write("lines.txt", std::string("first line\n\nsecond \r\nthird\rfourth\r\r\n  indented\t\n") +
                                               "caf\xc3\xa9 \xe4\xb8\xad\n\n\nlast without a break");
  SourceList sources = list_sources(file);
  REQUIRE(sources.files.size() == 1);
  CHECK(texts(read_all(sources)).size() == 1);  // whole by default
  sources.files[0].lines = true;
  const std::vector<std::string> ours = texts(read_all(sources));
  CHECK(ours == std::vector<std::string>{"first line", "second ", "third", "fourth", "  indented\t", "caf\xc3\xa9 \xe4\xb8\xad",
                                         "last without a break"});
  // The oracle: load_dataset("text", keep_linebreaks=False), run_clm.py's reader, its rows hex
  // encoded a line each; its empty rows are the empty documents this reader drops.
  const std::string rows = dir.file("rows.hex");
  const std::string command = "HF_DATASETS_OFFLINE=1 " + std::string(LLMRDZV_TEST_PYTHON) +
                              " -c \"import sys, datasets; d = datasets.load_dataset('text', data_files=sys.argv[1], "
                              "keep_linebreaks=False, split='train', cache_dir=sys.argv[3]); "
                              "open(sys.argv[2], 'w').write(''.join(r.encode().hex() + chr(10) for r in d['text']))\" " +
                              file + " " + rows + " " + dir.file("hf-cache") + " > " + dir.file("oracle.log") + " 2>&1";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  std::vector<std::string> theirs;
  std::ifstream in(rows);
  for (std::string hex; std::getline(in, hex);) {
    std::string row;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) row += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    if (!row.empty()) theirs.push_back(row);
  }
  CHECK(ours == theirs);
  // Lines count as documents for the validation split, and the fingerprint tells the two readings apart.
  CHECK(texts(read_all(sources, {DocumentSelection::Part::validation, 50})).size() == 3);
  CHECK(source_fingerprint(sources, {}) != source_fingerprint(list_sources(file), {}));
  DocumentReader reader(sources, {});
  DocumentReader::Chunk chunk;
  for (int i = 0; i < 3; ++i) REQUIRE(reader.next(chunk));
  CHECK(chunk.text == "third");
  CHECK(reader.position().jsonl_line == 4);  // the reader's line, counted at "\n"s
}

TEST_CASE("bad .jsonl lines are errors naming file and line") {
  ScratchDir dir("corpus");
  const auto check_error = [&](const std::string& content, const std::string& expected) {
    const auto file = dir.write("bad.jsonl", content);
    CHECK_THROWS_WITH(read_all(list_sources(file)), Catch::Contains("bad.jsonl:2: ") && Catch::Contains(expected));
  };
  check_error("{\"text\": \"ok\"}\n{\"body\": \"no text\"}\n", "no \"text\" member");
  check_error("{\"text\": \"ok\"}\n{\"text\": 42}\n", "\"text\" member is not a string");
  check_error("{\"text\": \"ok\"}\nplain words\n", "not a JSON object");
  check_error("{\"text\": \"ok\"}\n{\"text\": \"unterminated}\n", "not a JSON object");
  check_error("{\"text\": \"ok\"}\n{\"text\": \"a\"} trailing\n", "not a JSON object");
}

TEST_CASE(".json files are JSON Lines as in run_clm.py, and CSV files are refused rather than read as text") {
  ScratchDir dir("corpus");
  const auto file = dir.write("docs.json", "{\"text\": \"one\"}\n{\"text\": \"two\"}\n");
  const SourceList sources = list_sources(file);
  REQUIRE(sources.files.size() == 1);
  CHECK(sources.files[0].jsonl);
  CHECK(texts(read_all(sources)) == std::vector<std::string>{"one", "two"});
  // One JSON document (an array of records) is not JSON Lines: the message says what is read.
  const auto array = dir.write("array.json", "[{\"text\": \"one\"},\n {\"text\": \"two\"}]\n");
  CHECK_THROWS_WITH(read_all(list_sources(array)),
                    Catch::Contains("array.json:1: not a JSON object") &&
                        Catch::Contains("a .json file is read as JSON Lines: one {\"text\": ...} object per line"));
  const auto csv = dir.write("data.csv", "text\n\"hello, world\"\n");
  CHECK_THROWS_WITH(list_sources(csv), Catch::Contains("data.csv: CSV files are not read"));
  dir.write("folder/a.txt", "words");
  dir.write("folder/b.csv", "text\nwords\n");
  CHECK_THROWS_WITH(list_sources(dir / "folder"), Catch::Contains("b.csv: CSV files are not read"));
}

TEST_CASE("the validation split takes p% of the non-empty documents, spread evenly, disjoint from train") {
  ScratchDir dir("corpus");
  for (int i = 0; i < 10; ++i) dir.write("doc" + std::to_string(i) + ".txt", "document " + std::to_string(i));
  dir.write("doc35-empty.txt", "");  // sorts between doc3 and doc4; dropped and not counted
  const SourceList sources = list_sources(dir.path());

  const auto validation = texts(read_all(sources, {DocumentSelection::Part::validation, 20}));
  const auto train = texts(read_all(sources, {DocumentSelection::Part::train, 20}));
  CHECK(validation == std::vector<std::string>{"document 4", "document 9"});
  CHECK(train.size() == 8);
  std::set<std::string> all(train.begin(), train.end());
  all.insert(validation.begin(), validation.end());
  CHECK(all.size() == 10);

  CHECK_THROWS_WITH(DocumentReader(sources, {DocumentSelection::Part::train, 0}),
                    Catch::Contains("between 1 and 99"));
  CHECK_THROWS_WITH(DocumentReader(sources, {DocumentSelection::Part::validation, 100}),
                    Catch::Contains("between 1 and 99"));
}

TEST_CASE("long documents arrive in chunks cut only at safe places, or at a character boundary in a huge word") {
  ScratchDir dir("corpus");
  std::string text;
  for (int i = 0; i < 400; ++i) {
    text += (i % 7 == 0 ? "\n\n  indented " : i % 5 == 0 ? "\n\xc3\xa9t\xc3\xa9 " : i % 3 == 0 ? " \n\nline " : "\nline ") +
            std::to_string(i);
  }
  text += std::string(3000, 'x');  // a long stretch with no safe place
  std::string huge_word;
  for (int i = 0; i < 12000; ++i) huge_word += "\xc3\xa9";  // 24000 bytes without whitespace
  text += " " + huge_word;
  const SourceList sources = list_sources(dir.write("long.txt", text));

  DocumentReader reader(sources, {}, 256);  // a forced cut after 64 * 256 bytes without a safe place
  DocumentReader::Chunk chunk;
  std::string joined;
  std::size_t chunks = 0, forced = 0;
  while (reader.next(chunk)) {
    ++chunks;
    REQUIRE(!chunk.text.empty());
    const std::size_t end = joined.size() + chunk.text.size();
    if (!chunk.ends_document) {
      if (end > text.size() - huge_word.size()) {
        ++forced;  // inside the huge word: never inside a character
        CHECK(static_cast<unsigned char>(text[end]) == 0xC3);
      } else {
        bool safe = false;  // a reader knowing a few bytes past `end` would cut there too
        for (std::size_t more = 1; more <= 5 && !safe; ++more)
          safe = llmrdzv::tokenizer::last_safe_cut(std::string_view(text).substr(0, end + more)) == end;
        CHECK(safe);
      }
    }
    joined += chunk.text;
  }
  CHECK(joined == text);
  CHECK(chunks > 10);
  CHECK(forced >= 1);
}

TEST_CASE("source fingerprints change with contents, file set and selection, and only then") {
  ScratchDir dir("corpus");
  dir.write("a.txt", "alpha");
  const auto b = dir.write("b.txt", "beta");
  const std::string base = source_fingerprint(list_sources(dir.path()), {});
  CHECK(base.size() == 64);
  CHECK(source_fingerprint(list_sources(dir.path()), {}) == base);
  CHECK(source_fingerprint(list_sources(dir.path()), {DocumentSelection::Part::train, 10}) != base);
  CHECK(source_fingerprint(list_sources(dir.path()), {DocumentSelection::Part::train, 10}) !=
        source_fingerprint(list_sources(dir.path()), {DocumentSelection::Part::validation, 10}));

  dir.write("b.txt", "BETA");  // same size: the modification time tells
  std::filesystem::last_write_time(b, std::filesystem::last_write_time(b) + std::chrono::seconds(5));
  const std::string touched = source_fingerprint(list_sources(dir.path()), {});
  CHECK(touched != base);
  dir.write("c.txt", "gamma");
  CHECK(source_fingerprint(list_sources(dir.path()), {}) != touched);
}
