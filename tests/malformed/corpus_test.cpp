// A damaged .jsonl corpus: the reader refuses it with DataError naming the line, or yields
// exactly the documents the file's lines hold (checked against the JSON reader line by line),
// whole, in order, through chunks smaller than the documents.
#include <catch2/catch.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "feed_damaged.hpp"
#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/io/json.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv;
using testing::Broken;
using testing::feed_damaged;
using testing::ScratchDir;

namespace {

// The documents the file holds by the corpus format's rules, or nullopt when a line breaks them.
std::optional<std::vector<std::string>> expected_documents(const std::string& file) {
  std::vector<std::string> documents;
  std::istringstream lines(file);
  for (std::string line; std::getline(lines, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const json::Value record = json::parse(line);
      const json::Value* text = record.is_object() ? record.find("text") : nullptr;
      if (text == nullptr || !text->is_string()) return std::nullopt;
      if (!text->as_string().empty()) documents.push_back(text->as_string());
    } catch (const json::ParseError&) {
      return std::nullopt;
    }
  }
  return documents;
}

}  // namespace

TEST_CASE("a damaged .jsonl corpus is refused with DataError or read as exactly the documents its lines hold", "[malformed][corpus]") {
  ScratchDir scratch("malformed-corpus");
  const std::string seed =
      "{\"text\": \"def main():\\n    return 0\\n\", \"meta\": {\"source\": \"a.py\"}}\n"
      "\n"
      "{\"text\": \"Caf\\u00e9 au lait, \\ud83d\\ude00 and a tab\\there.\"}\r\n"
      "   \t\n"
      "{\"id\": 3, \"text\": \"\"}\n"
      "{\"text\": \"the last document, with no newline after it\"}";
  const std::string path = scratch.file("corpus.jsonl");
  feed_damaged<data::DataError>("DocumentReader over a .jsonl file", {seed}, 4000, [&](const std::string& file) {
    scratch.write("corpus.jsonl", file);
    const auto expected = expected_documents(file);
    std::vector<std::string> documents(1);
    try {
      data::DocumentReader reader(data::list_sources(path), {}, /*chunk_bytes=*/16);
      data::DocumentReader::Chunk chunk;
      while (reader.next(chunk)) {
        documents.back() += chunk.text;
        if (chunk.ends_document) documents.emplace_back();
      }
    } catch (const data::DataError& e) {
      if (expected) throw Broken(std::string("refused a file the format allows: ") + e.what());
      throw;
    }
    documents.pop_back();
    if (!expected) throw Broken("read a file the format refuses");
    if (documents != *expected) throw Broken("read " + std::to_string(documents.size()) + " documents, not the file's " +
                                             std::to_string(expected->size()));
  });
}
