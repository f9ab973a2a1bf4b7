// Our side of tokenizer-encode-bench (encode_bench.py): one timed single-threaded pass of
// Tokenizer::encode over every document of a file, with a fresh piece cache, as the trainer
// tokenizes a corpus once. Loading the tokenizer is not timed. Prints one JSON line; with --ids,
// also writes the ids (per document: its token count, then its ids; uint32, native byte order) so
// that the driver can check them against HF's.
//   tokenizer-encode-timer TOKENIZER_DIR DOCUMENTS [--ids OUT]
// DOCUMENTS holds the documents separated by NUL bytes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace {

using llmrdzv::tokenizer::TokenId;
using llmrdzv::tokenizer::Tokenizer;

std::vector<std::string_view> split_documents(std::string_view text) {
  std::vector<std::string_view> documents;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('\0', start), text.size());
    documents.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return documents;
}

void write_ids(const std::string& path, const std::vector<std::vector<TokenId>>& ids) {
  std::ofstream out(path, std::ios::binary);
  for (const std::vector<TokenId>& document : ids) {
    const auto count = static_cast<std::uint32_t>(document.size());
    out.write(reinterpret_cast<const char*>(&count), sizeof count);
    out.write(reinterpret_cast<const char*>(document.data()), static_cast<std::streamsize>(document.size() * sizeof(TokenId)));
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (!(argc == 3 || (argc == 5 && std::string_view(argv[3]) == "--ids"))) {
    std::fprintf(stderr, "usage: tokenizer-encode-timer TOKENIZER_DIR DOCUMENTS [--ids OUT]\n");
    return 2;
  }
  try {
    const Tokenizer tokenizer = Tokenizer::from_directory(argv[1]);  // its piece cache starts empty
    std::ifstream in(argv[2], std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot read ") + argv[2]);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    const std::vector<std::string_view> documents = split_documents(text);

    std::vector<std::vector<TokenId>> ids(documents.size());
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < documents.size(); ++i) ids[i] = tokenizer.encode(documents[i]);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::size_t tokens = 0;
    for (const auto& document : ids) tokens += document.size();
    if (argc == 5) write_ids(argv[4], ids);
    std::printf("{\"seconds\": %.6f, \"bytes\": %zu, \"documents\": %zu, \"tokens\": %zu, \"vocab\": %zu}\n", seconds,
                text.size() - (documents.size() - 1), documents.size(), tokens, tokenizer.vocab_size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer-encode-timer: %s\n", e.what());
    return 1;
  }
  return 0;
}
