// Malformed vocab.json / merges.txt / tokenizer.json: each is rejected with an error naming the
// file, the line or component, and the problem; a tokenizer.json describing any other tokenizer
// than those the trainer reads (GPT-2, OPT, Llama 3, Llama 2) is refused naming the component, and
// so is a tokenizer_config.json next to vocab.json + merges.txt that asks for more than GPT2Tokenizer.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "scratch_dir.hpp"

using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::Tokenizer;
using llmrdzv::tokenizer::TokenizerError;

namespace {

// The byte tokenizer's vocab.json (257 entries, ids 0..256) as a valid starting point.
std::string byte_vocab_entries(const ScratchDir& scratch) {
  Tokenizer::bytes().save(scratch / "bytes");
  std::string text;
  std::ifstream(scratch / "bytes" / "vocab.json") >> text;  // one line, no spaces
  return text.substr(1, text.size() - 2);                   // without the braces
}

std::string load_error(const ScratchDir& scratch, const std::string& vocab, const std::string& merges) {
  const auto v = scratch.write("v.json", vocab);
  const auto m = scratch.write("m.txt", merges);
  try {
    Tokenizer::from_files(v, m);
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "no error";
}

// A valid GPT-2-style tokenizer.json over the byte vocabulary plus "ab" (id 257), with `replace`
// applied: each pair replaces its first text in the document.
std::string tokenizer_json(const ScratchDir& scratch, std::vector<std::pair<std::string, std::string>> replace = {}) {
  std::string text =
      "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
      " \"added_tokens\": [{\"id\": 256, \"content\": \"<|endoftext|>\", \"single_word\": false, \"lstrip\": false,"
      " \"rstrip\": false, \"normalized\": false, \"special\": true}],\n"
      " \"normalizer\": null,\n"
      " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": true},\n"
      " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],"
      " \"pair\": [], \"special_tokens\": {}},\n"
      " \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n"
      " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\","
      " \"end_of_word_suffix\": \"\", \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n"
      "  \"vocab\": {" + byte_vocab_entries(scratch) + ", \"ab\": 257},\n"
      "  \"merges\": [[\"a\", \"b\"]]}}\n";
  for (const auto& [from, to] : replace) {
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string json_error(const ScratchDir& scratch, const std::string& text) {
  const auto path = scratch.write("t/tokenizer.json", text);
  try {
    Tokenizer::from_tokenizer_json(path);
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("vocab.json problems name file and line", "[tokenizer][errors]") {
  ScratchDir scratch("tok-badvocab");
  const std::string entries = byte_vocab_entries(scratch);
  const std::string merges = "#version: 0.2\n";
  using Catch::Contains;
  CHECK_THAT(load_error(scratch, "{\n" + entries + ",\n\"ab\" 257}", merges), Contains("v.json:3:") && Contains("expected ':'"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":257", merges), Contains("expected '}'"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":2.5}", merges), Contains("token \"ab\": its id is not a whole number"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":-1}", merges), Contains("out of range"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":256}", merges), Contains("id 256 is given to both"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\n\"!\":257}", merges), Contains("v.json:2:") && Contains("duplicate key \"!\""));
  // 258 tokens: ids 0..257. A gap means an id past that, refused before anything is sized by it
  // (a 20-byte file once made the reader allocate tens of GB).
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"ab\":300}", merges),
             Contains("token \"ab\": id 300 is out of range 0..257 (ids run 0..N-1 for the vocabulary's 258 tokens)"));
  CHECK_THAT(load_error(scratch, "{\"a\":1073741823}", merges), Contains("id 1073741823 is out of range 0..0"));
  CHECK_THAT(load_error(scratch, "{" + entries + "} trailing", merges), Contains("trailing characters"));
  CHECK_THAT(load_error(scratch, "{}", merges), Contains("the vocabulary is empty"));
  CHECK_THAT(load_error(scratch, "{\"a\":0,\"b\":1}", merges), Contains("not a byte-level vocabulary: byte 0"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"\\ud800\":257}", merges), Contains("surrogate"));
  CHECK_THAT(load_error(scratch, "{" + entries + ",\"\xff\":257}", merges), Contains("invalid UTF-8"));
  CHECK_THAT(load_error(scratch, "[1,2]", merges), Contains("expected an object of token -> id, got array"));
  CHECK_THROWS_WITH(Tokenizer::from_directory(scratch / "missing"), Contains("cannot open") && Contains("vocab.json"));
}

TEST_CASE("merges.txt problems name file and line", "[tokenizer][errors]") {
  ScratchDir scratch("tok-badmerges");
  const std::string vocab = "{" + byte_vocab_entries(scratch) + ",\"ab\":257,\"abc\":258}";
  using Catch::Contains;
  CHECK(load_error(scratch, vocab, "#version: 0.2\na b\nab c\n") == "no error");
  CHECK_THAT(load_error(scratch, vocab, "#version: 0.2\na b\nabc\n"), Contains("m.txt:3:") && Contains("two tokens"));
  CHECK_THAT(load_error(scratch, vocab, "a b c\n"), Contains("m.txt:1:") && Contains("two tokens"));
  CHECK_THAT(load_error(scratch, vocab, "a  b\n"), Contains("two tokens"));
  CHECK_THAT(load_error(scratch, vocab, "a b\n\nab c\n"), Contains("m.txt:2:"));
  CHECK_THAT(load_error(scratch, vocab, "a xyz\n"), Contains("m.txt:1:") && Contains("\"xyz\" is not in the vocabulary"));
  CHECK_THAT(load_error(scratch, vocab, "b a\n"), Contains("merge result \"ba\" is not in the vocabulary"));
  CHECK_THAT(load_error(scratch, vocab, "a b\nab c\na b\n"), Contains("m.txt:3:") && Contains("duplicate merge") && Contains("line 1"));
}

TEST_CASE("a GPT-2-style tokenizer.json reads as the same tokenizer as its vocab.json + merges.txt", "[tokenizer][tokenizer_json]") {
  ScratchDir scratch("tok-json");
  scratch.write("t/tokenizer.json", tokenizer_json(scratch));
  const Tokenizer from_json = Tokenizer::from_directory(scratch / "t");
  const llmrdzv::tokenizer::TokenId space = from_json.encode(" ")[0];
  CHECK(from_json.encode("ab abab") == std::vector<llmrdzv::tokenizer::TokenId>{257, space, 257, 257});
  CHECK(from_json.eos_id() == 256);
  from_json.save(scratch / "pair");
  CHECK(Tokenizer::from_directory(scratch / "pair").fingerprint() == from_json.fingerprint());
  // "left right" merges (older tokenizers), and a missing post-processor and decoder, read alike.
  const std::string old_style = tokenizer_json(scratch, {{"[[\"a\", \"b\"]]", "[\"a b\"]"}, {"\"post_processor\": {", "\"post_processor\": null, \"x\": {"},
                                                          {"\"decoder\": {", "\"decoder\": null, \"y\": {"}});
  scratch.write("old/tokenizer.json", old_style);
  CHECK(Tokenizer::from_directory(scratch / "old").fingerprint() == from_json.fingerprint());
}

TEST_CASE("tokenizer.json components of other tokenizers are refused by name", "[tokenizer][tokenizer_json][errors]") {
  ScratchDir scratch("tok-json-bad");
  using Catch::Contains;
  CHECK(json_error(scratch, tokenizer_json(scratch)) == "no error");
  const auto refused = [&](std::pair<std::string, std::string> change, const std::string& named) {
    INFO(change.second);
    CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {change})),
               Contains("t/tokenizer.json: " + named) && Contains("this trainer reads GPT-2, Llama 3 and Qwen2 byte-level BPE"));
  };
  const std::string text_only = "[{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]";
  const std::string byte_level_pre = "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": true}";
  const auto llama3_split = [](const std::string& regex) {
    return "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"" + regex +
           "\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
           "\"trim_offsets\": true, \"use_regex\": false}]}";
  };
  refused({"\"normalizer\": null", "\"normalizer\": {\"type\": \"NFKC\"}"}, "normalizer NFKC: only NFC, Llama 2's");
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}"},
                                                        {"\"pre_tokenizer\": {\"type\": \"ByteLevel\"",
                                                         "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", "
                                                         "\"split\": false, \"prepend_scheme\": \"first\""}})),
             Contains("normalizer NFC: NFC goes with byte-level BPE"));
  // Under NFC, an added token HF would look for in the normalized text.
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}"},
                                                        {"\"normalized\": false, \"special\": true", "\"normalized\": true, \"special\": true"}})),
             Contains("a special token matched in the normalized text"));
  refused({"\"normalizer\": null", "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"_\"}, "
                                   "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"_\"}]}"},
          "normalizer Sequence: only NFC, Llama 2's");
  refused({"\"pre_tokenizer\": {\"type\": \"ByteLevel\"", "\"pre_tokenizer\": {\"type\": \"Whitespace\""}, "pre_tokenizer Whitespace");
  refused({"\"pre_tokenizer\": {\"type\": \"ByteLevel\"", "\"pre_tokenizer\": {\"type\": \"Sequence\""}, "pre_tokenizer Sequence: expected Llama 3's");
  refused({byte_level_pre, llama3_split("\\\\s+")}, "pre_tokenizer.pretokenizers[0].pattern \"\\s+\": only Llama 3's and Qwen2's split patterns");
  refused({byte_level_pre, llama3_split("\\\\p{L}+")}, "pre_tokenizer.pretokenizers[0].pattern \"\\p{L}+\"");
  refused({"\"pre_tokenizer\": {\"type\": \"ByteLevel\"", "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"split\": true"},
          "pre_tokenizer.split = true");
  refused({"\"add_prefix_space\": false", "\"add_prefix_space\": true"}, "pre_tokenizer.add_prefix_space = true");
  refused({"\"use_regex\": true", "\"use_regex\": false"}, "pre_tokenizer.use_regex = false");
  refused({text_only, "[{\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]"},
          "post_processor.special_tokens: \"</s>\" must map to exactly one id");
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{text_only, "[{\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]"},
                                                        {"\"special_tokens\": {}", "\"special_tokens\": {\"</s>\": {\"id\": \"</s>\", \"ids\": [3]}}"}})),
             Contains("post_processor: its BOS \"</s>\" is not a special added token"));
  refused({text_only, "[{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"<|endoftext|>\", \"type_id\": 0}}]"},
          "post_processor TemplateProcessing: only \"$A\" and \"<special> $A\" (a BOS)");
  refused({text_only, "[{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]"},
          "post_processor.single[0]: expected a special token before the text");
  refused({"\"type\": \"TemplateProcessing\"", "\"type\": \"RobertaProcessing\""}, "post_processor RobertaProcessing");
  refused({"\"decoder\": {\"type\": \"ByteLevel\"", "\"decoder\": {\"type\": \"Metaspace\""}, "decoder Metaspace");
  refused({"\"type\": \"BPE\"", "\"type\": \"WordPiece\""}, "model WordPiece");
  refused({"\"type\": \"BPE\"", "\"type\": \"Unigram\""}, "model Unigram");
  refused({"\"byte_fallback\": false", "\"byte_fallback\": true"}, "model.byte_fallback = true: byte fallback");
  refused({"\"ignore_merges\": false", "\"ignore_merges\": true"}, "model.ignore_merges = true: taking whole words");
  refused({"\"dropout\": null", "\"dropout\": 0.1"}, "model.dropout");
  refused({"\"unk_token\": null", "\"unk_token\": \"<unk>\""}, "model.unk_token");
  refused({"\"continuing_subword_prefix\": \"\"", "\"continuing_subword_prefix\": \"##\""}, "model.continuing_subword_prefix");
  refused({"\"content\": \"<|endoftext|>\"", "\"content\": \"<pad>\""}, "added_tokens \"<pad>\" (id 256): the vocabulary has \"<|endoftext|>\"");
  refused({"\"id\": 256, \"content\"", "\"id\": 12, \"content\""}, "added_tokens \"<|endoftext|>\" (id 12): the vocabulary has");
  refused({"\"id\": 256, \"content\"", "\"id\": 300, \"content\""}, "added_tokens \"<|endoftext|>\" (id 300): ids must continue");
  refused({"\"added_tokens\": [{", "\"added_tokens\": [], \"x\": [{"}, "added_tokens: no tokenizer_config.json eos_token");
  refused({"\"single_word\": false", "\"single_word\": true"}, "added_tokens[0] \"<|endoftext|>\".single_word = true");
  // lstrip and rstrip are read (hf_kinds_test holds Phi-3's to HF); a flag that is no flag is not.
  CHECK(json_error(scratch, tokenizer_json(scratch, {{"\"lstrip\": false", "\"lstrip\": true"}})) == "no error");
  CHECK(json_error(scratch, tokenizer_json(scratch, {{"\"rstrip\": false", "\"rstrip\": true"}})) == "no error");
  refused({"\"rstrip\": false", "\"rstrip\": 1"}, "added_tokens[0] \"<|endoftext|>\".rstrip: expected true or false");
  // A non-special added token HF matches in the raw text ("normalized": false) is split out like a
  // special one; under a normalizer, one matched in the normalized text is refused.
  CHECK(json_error(scratch, tokenizer_json(scratch, {{"\"special\": true", "\"special\": false"}})) == "no error");
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}"},
                                                        {"\"normalized\": false, \"special\": true", "\"normalized\": true, \"special\": false"}})),
             Contains("added_tokens[0] \"<|endoftext|>\".normalized = true: a non-special added token matched after normalization"));
  // tokenizer_config.json next to it, as transformers reads it.
  const auto config_error = [&](const std::string& config, const std::string& text) {
    scratch.write("t/tokenizer_config.json", config);
    const std::string error = json_error(scratch, text);
    std::filesystem::remove(scratch / "t" / "tokenizer_config.json");
    return error;
  };
  // GPT2Tokenizer and Qwen2Tokenizer rebuild their own pipeline over any byte-level vocabulary, as
  // transformers' classes do: Llama 3's file read as GPT-2's, GPT-2's as Qwen2's.
  const auto kind_under = [&](const std::string& config, const std::string& text) {
    scratch.write("t/tokenizer_config.json", config);
    const Tokenizer::Kind kind = Tokenizer::from_tokenizer_json(scratch.write("t/tokenizer.json", text)).kind();
    std::filesystem::remove(scratch / "t" / "tokenizer_config.json");
    return kind;
  };
  CHECK(kind_under("{\"tokenizer_class\": \"GPT2Tokenizer\"}", tokenizer_json(scratch, {{byte_level_pre, llama3_split(
                 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"
                 "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+")}})) == Tokenizer::Kind::gpt2_bpe);
  CHECK(kind_under("{\"tokenizer_class\": \"Qwen2Tokenizer\"}", tokenizer_json(scratch)) == Tokenizer::Kind::qwen2_bpe);
  // The model directory's config.json, whose model_type AutoTokenizer reads: damaged, it is named.
  scratch.write("t/config.json", "{\"model_type\": \"qwen2\"");
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch)),
             Contains("t/config.json: at byte") && Contains("(AutoTokenizer reads its model_type)"));
  std::filesystem::remove(scratch / "t" / "config.json");
  // LlamaTokenizer over a byte-level file: AutoTokenizer reads the file as it is.
  CHECK(config_error("{\"tokenizer_class\": \"LlamaTokenizerFast\"}", tokenizer_json(scratch)) == "no error");
  CHECK_THAT(config_error("{\"tokenizer_class\": \"GemmaTokenizerFast\"}", tokenizer_json(scratch)),
             Contains("tokenizer_class GemmaTokenizerFast: transformers rebuilds Gemma's normalizer"));
  // Gemma's normalizer with a pre-tokenizer other than its Split at " ".
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"\"normalizer\": null",
                                                         "\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
                                                         "\"content\": \"\\u2581\"}"}})),
             Contains("pre_tokenizer ByteLevel: after Gemma's normalizer only a Split at \" \""));
  CHECK_THAT(config_error("{\"eos_token\": \"<eos>\"}", tokenizer_json(scratch)), Contains("eos_token \"<eos>\": not in the vocabulary"));
  CHECK_THAT(config_error("{\"eos_token\": 3}", tokenizer_json(scratch)), Contains("eos_token: expected a string or an object"));
  // What the config may change: the EOS (a vocabulary entry becomes special). Not the BOS:
  // transformers 5 drops add_bos_token and add_eos_token next to a tokenizer.json, whose
  // post-processor alone puts one (hf_kinds_test's Phi-3 case has add_bos_token false beside a
  // "<s> $A" template, and HF puts the "<s>").
  scratch.write("t/tokenizer_config.json", "{\"eos_token\": {\"content\": \"ab\"}, \"add_bos_token\": true, "
                                         "\"bos_token\": \"<|endoftext|>\", \"add_eos_token\": true}");
  const Tokenizer configured = Tokenizer::from_tokenizer_json(scratch.write("t/tokenizer.json", tokenizer_json(scratch)));
  std::filesystem::remove(scratch / "t" / "tokenizer_config.json");
  CHECK(configured.eos_id() == 257);
  CHECK_FALSE(configured.bos_id());
  CHECK(configured.encode_document("xab") == std::vector<llmrdzv::tokenizer::TokenId>{'x', 257});
  CHECK(configured.fingerprint() != Tokenizer::from_tokenizer_json(scratch / "t" / "tokenizer.json").fingerprint());
  // Bad vocabularies and merges: the same checks as vocab.json and merges.txt, named by JSON path.
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"[[\"a\", \"b\"]]", "[[\"a\", \"b\"], [\"a\", \"b\"]]"}})),
             Contains("model.merges[1]: duplicate merge \"a b\" (first at model.merges[0])"));
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"[[\"a\", \"b\"]]", "[[\"a\", \"zz\"]]"}})),
             Contains("model.merges[0]: token \"zz\" is not in the vocabulary"));
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"[[\"a\", \"b\"]]", "[\"ab\"]"}})),
             Contains("model.merges[0]: expected two tokens separated by one space"));
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"[[\"a\", \"b\"]]", "[[\"a\"]]"}})), Contains("model.merges[0]: expected"));
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"\"ab\": 257", "\"ab\": 300"}})), Contains("model.vocab: token \"ab\": id 300 is out of range 0..257"));
  CHECK_THAT(json_error(scratch, tokenizer_json(scratch, {{"\"vocab\": {", "\"vocab\": {\"ab\": 1, "}})), Contains("duplicate key \"ab\""));
  CHECK_THAT(json_error(scratch, "{\"model\": "), Contains("t/tokenizer.json:1: not valid JSON"));
  CHECK_THAT(json_error(scratch, "[]"), Contains("(top level): expected a JSON object"));
  CHECK_THAT(json_error(scratch, "{}"), Contains("pre_tokenizer: missing"));
}

namespace {

// The byte tokenizer's vocab.json + merges.txt in scratch/name with `config` as its
// tokenizer_config.json.
std::filesystem::path pair_with_config(const ScratchDir& scratch, const std::string& name, const std::string& config) {
  Tokenizer::bytes().save(scratch / name);
  std::filesystem::remove(scratch / name / "tokenizer.json");
  std::filesystem::remove(scratch / name / "special_tokens_map.json");
  scratch.write(name + "/tokenizer_config.json", config);
  return scratch / name;
}

}  // namespace

TEST_CASE("vocab.json + merges.txt are read with their tokenizer_config.json as GPT2Tokenizer",
          "[tokenizer][vocab_files][config]") {
  ScratchDir scratch("tok-pair-config");
  // What save() writes for GPT-2 is plain GPT-2 read either way.
  Tokenizer::bytes().save(scratch / "gpt2");
  std::filesystem::remove(scratch / "gpt2" / "tokenizer.json");
  const Tokenizer plain = Tokenizer::from_files(scratch / "gpt2" / "vocab.json", scratch / "gpt2" / "merges.txt");
  CHECK(Tokenizer::from_directory(scratch / "gpt2").fingerprint() == plain.fingerprint());
  // OPT's settings over a vocabulary without "</s>": added at the next id, the EOS and the BOS.
  const auto opt = pair_with_config(scratch, "opt", R"({"tokenizer_class": "GPT2Tokenizer", "add_bos_token": true,
      "bos_token": "</s>", "eos_token": {"content": "</s>", "lstrip": false, "__type": "AddedToken"}, "unk_token": "</s>"})");
  const Tokenizer ours = Tokenizer::from_directory(opt);
  CHECK(ours.vocab_size() == 258);
  CHECK(ours.eos_id() == 257);
  CHECK(ours.bos_id() == std::optional<llmrdzv::tokenizer::TokenId>(257));
  CHECK(ours.encode_document("a</s>") == std::vector<llmrdzv::tokenizer::TokenId>{257, 'a', 257});
  CHECK(ours.fingerprint() != plain.fingerprint());
  // Without added_tokens_decoder, special_tokens_map.json's tokens win (as transformers reads it).
  scratch.write("opt/special_tokens_map.json", R"({"eos_token": "<|endoftext|>"})");
  CHECK(Tokenizer::directory_tokenizer_files(opt) == "vocab.json + merges.txt + tokenizer_config.json + special_tokens_map.json");
  CHECK(Tokenizer::from_directory(opt).eos_id() == 256);
}

TEST_CASE("a tokenizer_config.json next to vocab.json + merges.txt that asks for another tokenizer is refused naming it",
          "[tokenizer][vocab_files][config]") {
  ScratchDir scratch("tok-pair-refused");
  const auto refused = [&](const std::string& config) {
    try {
      Tokenizer::from_directory(pair_with_config(scratch, "dir", config));
    } catch (const TokenizerError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(refused(R"({"tokenizer_class": "LlamaTokenizer"})"),
             Catch::Contains("tokenizer_config.json: tokenizer_class LlamaTokenizer") && Catch::Contains("only GPT2Tokenizer"));
  CHECK_THAT(refused(R"({"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": true})"),
             Catch::Contains("tokenizer_config.json: add_prefix_space = true"));
  CHECK_THAT(refused(R"({"add_eos_token": true})"), Catch::Contains("add_eos_token = true"));
  CHECK_THAT(refused(R"({"split_special_tokens": true})"), Catch::Contains("split_special_tokens = true"));
  CHECK_THAT(refused(R"({"post_processor": {}})"), Catch::Contains("tokenizer_config.json: post_processor"));
  CHECK_THAT(refused(R"({"pad_token": {"content": "<pad>", "lstrip": true}})"),
             Catch::Contains("pad_token \"<pad>\"") && Catch::Contains("strips whitespace"));
  CHECK_THAT(refused(R"({"added_tokens_decoder": {"3": {"content": "<|endoftext|>", "special": true}}})"),
             Catch::Contains("added_tokens_decoder 3") && Catch::Contains("gives it id 256"));
  CHECK_THAT(refused(R"({"added_tokens_decoder": {"257": {"content": "<x>"}}})"), Catch::Contains("non-special"));
  CHECK_THAT(refused(R"({"eos_token": null})"), Catch::Contains("eos_token"));
  scratch.write("dir/added_tokens.json", "{}");
  CHECK_THAT(refused("{}"), Catch::Contains("added_tokens.json"));
}
