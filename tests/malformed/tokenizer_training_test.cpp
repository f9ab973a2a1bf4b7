// `trainer tokenizer` fed damaged corpora: a text that is not UTF-8 is refused with DataError
// naming the file and line (HF's trainer refuses it too), a file with a NUL byte as binary (as
// training refuses it), any other text trains a vocabulary that loads and encodes the corpus back
// to its bytes.
#include <catch2/catch.hpp>

#include <string>

#include "feed_damaged.hpp"
#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/io/utf8.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "llmrdzv/train/tokenizer_training.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv;
using testing::Broken;
using testing::feed_damaged;
using testing::ScratchDir;

namespace {

bool is_utf8(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  char32_t cp;
  for (std::size_t i = 0, n = 0; i < text.size(); i += n) {
    if ((n = utf8::decode(p + i, text.size() - i, cp)) == 0) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a damaged corpus trains a tokenizer or is refused as not UTF-8 naming file and line", "[malformed][tokenizer_training]") {
  ScratchDir scratch("malformed-bpe");
  const std::string seed =
      "The Python tutorial: def main():\n    return 0\n\n"
      "Caf\xC3\xA9 au lait, \xF0\x9F\x98\x80 and a tab\there.\r\n"
      "\xE6\x9D\xB1\xE4\xBA\xAC  spaced   out  \n<|endoftext|> the the the end";
  train::TokenizerOptions options;
  options.train_file = scratch.file("corpus.txt");
  options.output_dir = scratch.file("tok");
  options.vocab_size = 300;
  options.min_frequency = 1;
  feed_damaged<data::DataError>("trainer tokenizer on a text file", {seed}, 400, [&](const std::string& text) {
    scratch.write("corpus.txt", text);
    const bool binary = text.find('\0') != std::string::npos;
    try {
      train::train_tokenizer(options, nullptr);
    } catch (const data::DataError& e) {
      const std::string message = e.what();
      if (binary) {
        if (message.find("binary file") == std::string::npos) throw Broken("a file with a NUL byte refused as " + message);
      } else if (is_utf8(text)) {
        throw Broken("refused UTF-8 text: " + message);
      } else if (message.find("corpus.txt:") == std::string::npos || message.find("not UTF-8") == std::string::npos) {
        throw Broken("text that is not UTF-8 refused without naming file:line and the problem: " + message);
      }
      throw;
    }
    if (binary || !is_utf8(text)) throw Broken("trained on a file with a NUL byte or text that is not UTF-8");
    const auto tokenizer = tokenizer::Tokenizer::from_directory(options.output_dir);
    if (tokenizer.decode(tokenizer.encode(text)) != text) throw Broken("the trained tokenizer does not encode the corpus back");
  });
}
