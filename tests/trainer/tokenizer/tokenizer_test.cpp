// Tokenizer behaviour that needs no HF: the byte tokenizer's ids, BPE merge order on a hand-made
// vocabulary, the invalid-UTF-8 rule, decode, fingerprints, save/load round trips.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "scratch_dir.hpp"

using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::TokenId;
using llmrdzv::tokenizer::Tokenizer;
using llmrdzv::tokenizer::TokenizerError;

namespace {

// vocab.json with the 256 byte symbols (the byte tokenizer's own, via save) plus extra tokens.
Tokenizer hand_vocab(const ScratchDir& scratch, const std::vector<std::string>& extra,
                     const std::vector<std::string>& merges) {
  std::string vocab;
  const Tokenizer byte_tokenizer = Tokenizer::bytes();
  for (TokenId id = 0; id < 256; ++id) {
    const std::string& token = byte_tokenizer.token_text(id);
    vocab += (id ? "," : "{") + std::string("\"") + (token == "\"" ? "\\\"" : token == "\\" ? "\\\\" : token) +
             "\":" + std::to_string(id);
  }
  for (std::size_t i = 0; i < extra.size(); ++i) vocab += ",\"" + extra[i] + "\":" + std::to_string(256 + i);
  vocab += "}";
  std::string merges_text = "#version: 0.2\n";
  for (const std::string& m : merges) merges_text += m + "\n";
  scratch.write("hand/vocab.json", vocab);
  scratch.write("hand/merges.txt", merges_text);
  return Tokenizer::from_directory(scratch / "hand");
}

}  // namespace

TEST_CASE("the byte tokenizer maps bytes to ids 0..255 and EOS to 256", "[tokenizer]") {
  const Tokenizer bytes = Tokenizer::bytes();
  CHECK(bytes.kind() == Tokenizer::Kind::bytes);
  CHECK(bytes.vocab_size() == 257);
  CHECK(bytes.eos_id() == 256);
  CHECK(bytes.encode("Hi \xff") == std::vector<TokenId>{'H', 'i', ' ', 0xff});
  CHECK(bytes.encode("a<|endoftext|>b") == std::vector<TokenId>{'a', 256, 'b'});
  CHECK(bytes.decode(std::vector<TokenId>{'o', 'k', 256}) == "ok<|endoftext|>");
  CHECK(bytes.token_text(' ') == "\xc4\xa0");  // GPT-2's byte map: space is U+0120 'Ġ'
  CHECK_THROWS_WITH(bytes.decode(std::vector<TokenId>{257}), Catch::Contains("cannot decode token id 257"));
  CHECK_THROWS_WITH(bytes.token_text(300), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("BPE merges the lowest rank first and the leftmost pair on ties", "[tokenizer]") {
  ScratchDir scratch("tok-hand");
  // ranks: (b c)=0, (a b)=1, (ab ab)=2
  const Tokenizer tok = hand_vocab(scratch, {"bc", "ab", "abab"}, {"b c", "a b", "ab ab"});
  const TokenId bc = 256, ab = 257, abab = 258;
  CHECK(tok.encode("abc") == std::vector<TokenId>{'a', bc});       // b c beats a b
  CHECK(tok.encode("ababab") == std::vector<TokenId>{abab, ab});   // leftmost ab ab first
  CHECK(tok.encode("ab ab") == std::vector<TokenId>{ab, ' ', ab});  // " ab" is a piece: Ġ a b -> Ġ ab
  CHECK(tok.eos_id() == 259);  // not in vocab.json: the next id
}

TEST_CASE("text_bytes counts the bytes of text a token stands for, none for special tokens", "[tokenizer]") {
  ScratchDir scratch("tok-bytes");
  const Tokenizer tok = hand_vocab(scratch, {"bc", "ab", "abab", "\u00c3\u00a9"}, {"b c", "a b", "ab ab"});
  CHECK(tok.text_bytes('a') == 1);
  CHECK(tok.text_bytes(256) == 2);  // "bc"
  CHECK(tok.text_bytes(258) == 4);  // "abab"
  CHECK(tok.text_bytes(259) == 2);  // "é": two UTF-8 bytes (its byte symbols Ã ©)
  CHECK(tok.text_bytes(tok.eos_id()) == 0);
  CHECK(Tokenizer::bytes().text_bytes(256) == 0);
  CHECK_THROWS_AS(tok.text_bytes(9999), TokenizerError);
}

TEST_CASE("invalid UTF-8 bytes are pieces of their own and cut the text", "[tokenizer]") {
  ScratchDir scratch("tok-invalid");
  const Tokenizer tok = hand_vocab(scratch, {"ab"}, {"a b"});
  const std::string left = "it's ab  ", right = "ab  x";
  std::vector<TokenId> expected = tok.encode(left);
  expected.push_back(0xff);  // the byte tokenizer's vocabulary layout: byte b is id b
  const std::vector<TokenId> tail = tok.encode(right);
  expected.insert(expected.end(), tail.begin(), tail.end());
  CHECK(tok.encode(left + "\xff" + right) == expected);
  // A truncated sequence is one piece per byte; decode gives the exact bytes back.
  const std::string truncated = "\xe2\x82(ab";
  CHECK(tok.encode(truncated) == std::vector<TokenId>{0xe2, 0x82, '(', 256});
  CHECK(tok.decode(tok.encode(truncated)) == truncated);
}

TEST_CASE("fingerprints follow the vocabulary and survive save/load", "[tokenizer]") {
  ScratchDir scratch("tok-fp");
  const Tokenizer one = hand_vocab(scratch, {"ab"}, {"a b"});
  CHECK(one.fingerprint().size() == 64);
  CHECK(one.fingerprint() != Tokenizer::bytes().fingerprint());
  one.save(scratch / "saved");
  const Tokenizer reloaded = Tokenizer::from_directory(scratch / "saved");
  CHECK(reloaded.fingerprint() == one.fingerprint());
  CHECK(Tokenizer::from_tokenizer_json(scratch / "saved" / "tokenizer.json").fingerprint() == one.fingerprint());
  CHECK(reloaded.encode("abab ab") == one.encode("abab ab"));
  ScratchDir other("tok-fp2");
  const Tokenizer two = hand_vocab(other, {"ab", "ba"}, {"a b", "b a"});
  CHECK(two.fingerprint() != one.fingerprint());
  CHECK(Tokenizer::directory_tokenizer_files(scratch / "saved") ==
        "tokenizer.json + tokenizer_config.json (the same as vocab.json + merges.txt)");
  CHECK(Tokenizer::directory_tokenizer_files(scratch.path()).empty());
  CHECK(Tokenizer::unreadable_tokenizer_files(scratch / "saved").empty());  // its tokenizer_config.json too
  // Another format, or half of the pair: named, so a caller can refuse instead of guessing.
  ScratchDir foreign("tok-foreign");
  CHECK(Tokenizer::unreadable_tokenizer_files(foreign.path()).empty());
  foreign.write("tokenizer.model", "sentencepiece");
  foreign.write("tokenizer_config.json", "{}");
  CHECK(Tokenizer::unreadable_tokenizer_files(foreign.path()) ==
        std::vector<std::string>{"tokenizer.model", "tokenizer_config.json"});
  foreign.write("vocab.json", "{}");
  CHECK(Tokenizer::unreadable_tokenizer_files(foreign.path()).back() == "vocab.json");
  // tokenizer.json is a form from_directory reads (the vocab.json + merges.txt pair wins over it).
  foreign.write("tokenizer.json", "{}");
  CHECK(Tokenizer::directory_tokenizer_files(foreign.path()) == "tokenizer.json + tokenizer_config.json");
  CHECK(Tokenizer::unreadable_tokenizer_files(foreign.path()).empty());
  // Both forms in one directory must say the same: a stale merges.txt next to tokenizer.json is refused.
  scratch.write("saved/merges.txt", "#version: 0.2\n");
  CHECK_THROWS_WITH(Tokenizer::from_directory(scratch / "saved"), Catch::Contains("describe different tokenizers"));
  std::filesystem::remove(scratch / "saved" / "tokenizer.json");
  CHECK(Tokenizer::directory_tokenizer_files(scratch / "saved") == "vocab.json + merges.txt + tokenizer_config.json");
  CHECK(Tokenizer::from_directory(scratch / "saved").fingerprint() != one.fingerprint());
  // Copies share the vocabulary and encode alike.
  const Tokenizer copy = one;
  CHECK(copy.encode("ab ab abab") == one.encode("ab ab abab"));
}

TEST_CASE("display text replaces each byte outside well-formed UTF-8 with U+FFFD", "[tokenizer]") {
  using llmrdzv::tokenizer::replace_invalid_utf8;
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(replace_invalid_utf8("plain ascii") == "plain ascii");
  CHECK(replace_invalid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xF0\x9F\x98\x80");
  CHECK(replace_invalid_utf8("a\xFF" "b") == "a" + fffd + "b");
  CHECK(replace_invalid_utf8("cut \xE2\x82") == "cut " + fffd + fffd);  // a truncated euro sign
  CHECK(replace_invalid_utf8("\xED\xA0\x80") == fffd + fffd + fffd);  // a surrogate
  CHECK(replace_invalid_utf8("") == "");
}
