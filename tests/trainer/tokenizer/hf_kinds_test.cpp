// The tokenizer kinds beyond GPT-2's against HF (transformers' AutoTokenizer on files its makers'
// way of saving produced, built at test time from a vocabulary trained on the test text): OPT's
// GPT-2 BPE with a BOS (tokenizer.json, and vocab.json + merges.txt + tokenizer_config.json as the
// hub ships it), Llama 3's and Qwen2's byte-level BPE, Llama 2's SentencePiece-style BPE in each
// form it is shipped in, and Gemma's. Ids with the BOS (HF's tokenizer(text)), EOS, BOS, vocabulary size,
// and the exported files loaded by HF again.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "hf_oracle.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "parity_cases.hpp"
#include "scratch_dir.hpp"

using llmrdzv::test::hard_cases;
using llmrdzv::test::hf_encode;
using llmrdzv::test::OracleResult;
using llmrdzv::test::OracleTraining;
using llmrdzv::test::random_cases;
using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::TokenId;
using llmrdzv::tokenizer::Tokenizer;

namespace {

std::vector<std::string> parity_cases(std::uint32_t seed) {
  std::vector<std::string> cases = hard_cases();
  for (std::string& c : random_cases(1500, seed)) cases.push_back(std::move(c));
  return cases;
}

void expect_same_documents(const Tokenizer& ours, const std::vector<std::string>& cases, const OracleResult& theirs) {
  REQUIRE(theirs.ids.size() == cases.size());
  CHECK(ours.eos_id() == theirs.eos);
  CHECK(ours.bos_id() == theirs.bos);
  CHECK(ours.vocab_size() == theirs.vocab_size);
  std::size_t same = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": \"" << cases[i] << "\"");
    const std::vector<TokenId> ids = ours.encode_document(cases[i]);
    CHECK(ids == theirs.ids[i]);
    same += ids == theirs.ids[i];
  }
  CHECK(same == cases.size());
}

// Makes a tokenizer of `kind` in scratch/kind, checks our reading of it (from `files`) against HF
// on the cases, then the files save() writes: HF loads them with the same ids (with the model's
// config.json next to them, as an exported model has it), and we read them back the same.
Tokenizer check_kind(const ScratchDir& scratch, const std::string& kind, std::uint32_t seed,
                     const std::string& files = "tokenizer.json + tokenizer_config.json") {
  const std::vector<std::string> cases = parity_cases(seed);
  const auto corpus = scratch.write("corpus.txt", llmrdzv::test::training_text());
  const OracleResult theirs = hf_encode(scratch / kind, cases, OracleTraining{corpus, 600, true, false, kind}, true);
  CHECK(Tokenizer::directory_tokenizer_files(scratch / kind) == files);
  const Tokenizer ours = Tokenizer::from_directory(scratch / kind);
  expect_same_documents(ours, cases, theirs);
  ours.save(scratch / "exported");
  if (std::filesystem::exists(scratch / kind / "config.json")) {
    std::filesystem::copy_file(scratch / kind / "config.json", scratch / "exported" / "config.json");
  }
  expect_same_documents(ours, cases, hf_encode(scratch / "exported", cases, std::nullopt, true));
  CHECK(Tokenizer::from_directory(scratch / "exported").fingerprint() == ours.fingerprint());
  return ours;
}

}  // namespace

TEST_CASE("OPT's GPT-2 BPE with \"</s>\" as BOS encodes as HF does", "[tokenizer][hf][tokenizer_json][bos]") {
  ScratchDir scratch("tok-hf-opt");
  const Tokenizer ours = check_kind(scratch, "opt", 11);
  CHECK(ours.kind() == Tokenizer::Kind::gpt2_bpe);
  REQUIRE(ours.bos_id());
  CHECK(ours.token_text(*ours.bos_id()) == "</s>");
  CHECK(ours.bos_id() == ours.eos_id());
  CHECK(ours.encode_document("x").front() == *ours.bos_id());
  CHECK(ours.encode("x").front() != *ours.bos_id());
  CHECK(ours.decode(ours.encode("a \xff</s><pad>b")) == "a \xff</s><pad>b");
}

TEST_CASE("OPT's vocab.json + merges.txt + tokenizer_config.json as the hub ships them encode as HF does",
          "[tokenizer][hf][vocab_files][bos]") {
  // make_opt's files before transformers re-saves them, and facebook/opt-125m's form (AddedToken
  // objects, special_tokens_map.json, the class from config.json's model_type).
  for (const auto& [kind, files] : {std::pair<std::string, std::string>{"opt-raw", "vocab.json + merges.txt + tokenizer_config.json"},
                                    {"opt-hub-raw", "vocab.json + merges.txt + tokenizer_config.json + special_tokens_map.json"}}) {
    SECTION(kind) {
      ScratchDir scratch("tok-hf-" + kind);
      const Tokenizer ours = check_kind(scratch, kind, 15, files);
      CHECK(ours.kind() == Tokenizer::Kind::gpt2_bpe);
      REQUIRE(ours.bos_id());
      CHECK(ours.token_text(*ours.bos_id()) == "</s>");
      CHECK(ours.bos_id() == ours.eos_id());
      CHECK(Tokenizer::directory_tokenizer_files(scratch / "exported") == files);
      // "<pad>" is special too, and the token cache's key is not plain GPT-2's.
      CHECK(ours.encode("a<pad>b").size() == 3);
      CHECK(ours.fingerprint() != Tokenizer::from_files(scratch / kind / "vocab.json", scratch / kind / "merges.txt").fingerprint());
    }
  }
}

TEST_CASE("Llama 3's byte-level BPE encodes as HF does", "[tokenizer][hf][tokenizer_json][llama3]") {
  ScratchDir scratch("tok-hf-llama3");
  const Tokenizer ours = check_kind(scratch, "llama3", 12);
  CHECK(ours.kind() == Tokenizer::Kind::llama3_bpe);
  CHECK(ours.cut_rule() == llmrdzv::tokenizer::CutRule::llama3);
  REQUIRE(ours.bos_id());
  CHECK(ours.token_text(*ours.bos_id()) == "<|begin_of_text|>");
  CHECK(ours.token_text(ours.eos_id()) == "<|end_of_text|>");
  // ignore_merges: words in the vocabulary that no merge makes are still one token each.
  CHECK(ours.encode(" xyzzy").size() == 1);
  CHECK(ours.encode("Quux").size() == 1);
  CHECK(ours.encode("123456").size() == 2);
  const std::string text = "It'S \xff\t(x)\r\n\r\n <|eot_id|>";
  CHECK(ours.decode(ours.encode(text)) == text);
}

// Qwen2's (and Qwen3's): NFC first, so precomposed and combining spellings encode alike; single
// digits; a non-special added token split out of the raw text.
TEST_CASE("Qwen2's byte-level BPE with NFC encodes as HF does", "[tokenizer][hf][tokenizer_json][qwen2]") {
  ScratchDir scratch("tok-hf-qwen2");
  const Tokenizer ours = check_kind(scratch, "qwen2", 13);
  CHECK(ours.kind() == Tokenizer::Kind::qwen2_bpe);
  CHECK(ours.cut_rule() == llmrdzv::tokenizer::CutRule::llama3);
  CHECK_FALSE(ours.bos_id());
  CHECK(ours.token_text(ours.eos_id()) == "<|endoftext|>");
  CHECK(ours.encode("caf\xC3\xA9") == ours.encode("cafe\xCC\x81"));  // U+00E9 and e + U+0301
  CHECK(ours.encode("123456").size() == 6);
  CHECK(ours.encode("a<tool_call>b").size() == 3);
  CHECK(ours.encode("x<|im_start|>y").size() == 3);
  const std::string text = "It'S \xff\t(x)\r\n <|im_end|>";
  CHECK(ours.decode(ours.encode(text)) == text);
}

// Gemma's: SentencePiece-style with spaces as "▁" and none before the text.
TEST_CASE("Gemma's SentencePiece-style BPE encodes as HF does", "[tokenizer][hf][tokenizer_json][gemma]") {
  ScratchDir scratch("tok-hf-gemma");
  const Tokenizer ours = check_kind(scratch, "gemma", 14);
  CHECK(ours.kind() == Tokenizer::Kind::sentencepiece_bpe);
  CHECK(ours.token_text(ours.eos_id()) == "<eos>");
  CHECK(ours.cut_rule() == llmrdzv::tokenizer::CutRule::before_spaces);
  CHECK(ours.encode("a<h1>b<start_of_turn>").size() == 4);
  CHECK(ours.decode(ours.encode("a b\xff")) == "a b\xff");  // no "▁" before the text
}

TEST_CASE("Llama 2's SentencePiece-style BPE as transformers 5 saves it encodes as HF does",
          "[tokenizer][hf][tokenizer_json][sentencepiece]") {
  for (const std::string kind : {"llama2", "llama2-always"}) {
    SECTION(kind) {
      ScratchDir scratch("tok-hf-" + kind);
      const Tokenizer ours = check_kind(scratch, kind, 13);
      CHECK(ours.kind() == Tokenizer::Kind::sentencepiece_bpe);
      CHECK(ours.token_text(*ours.bos_id()) == "<s>");
      CHECK(ours.token_text(ours.eos_id()) == "</s>");
      CHECK(ours.cut_rule() == llmrdzv::tokenizer::CutRule::before_spaces);
      // Byte fallback: a character outside the vocabulary is its UTF-8 bytes' "<0xNN>" tokens.
      const std::vector<TokenId> ids = ours.encode("\xe4\xb8\x80");  // 一, not in the training text
      REQUIRE(ids.size() >= 3);
      CHECK(ours.token_text(ids[ids.size() - 3]) == "<0xE4>");
      CHECK(ours.decode(ours.encode("a b\xff")) == " a b\xff");
    }
  }
}

TEST_CASE("Llama 2's SentencePiece-style BPE in the normalizer form encodes as HF does",
          "[tokenizer][hf][tokenizer_json][sentencepiece]") {
  // As it is (PreTrainedTokenizerFast): "▁" before every text between special tokens; with
  // LlamaTokenizer's config (as Meta ships it) transformers rebuilds it with Metaspace instead.
  for (const std::string kind : {"llama2-legacy", "llama2-hub"}) {
    SECTION(kind) {
      ScratchDir scratch("tok-hf-" + kind);
      const Tokenizer ours = check_kind(scratch, kind, 14);
      CHECK(ours.kind() == Tokenizer::Kind::sentencepiece_bpe);
      const TokenId s = *ours.bos_id();
      const std::vector<TokenId> after_special = ours.encode("a<s>b");
      REQUIRE(after_special.size() >= 3);
      CHECK(after_special[after_special.size() - 2] == s);
      CHECK(ours.decode(std::vector<TokenId>{after_special.back()}) == (kind == "llama2-legacy" ? " b" : "b"));
    }
  }
}

// Phi-3's: Llama 2's kind, whose chat tokens take the whitespace after them along (rstrip), and
// two tokens that take the whitespace before them (lstrip), against HF on chat-shaped texts; read
// alone (LlamaTokenizer's rebuild) and in a model directory of Phi-3 or Mistral (as it is).
TEST_CASE("Phi-3's SentencePiece-style BPE with whitespace-absorbing chat tokens encodes as HF does",
          "[tokenizer][hf][tokenizer_json][phi3]") {
  ScratchDir scratch("tok-hf-phi3");
  const Tokenizer ours = check_kind(scratch, "phi3", 15);
  CHECK(ours.kind() == Tokenizer::Kind::sentencepiece_bpe);
  REQUIRE(ours.bos_id());  // the file's "<s> $A", whatever add_bos_token says (transformers 5 drops it)
  CHECK(ours.token_text(*ours.bos_id()) == "<s>");
  CHECK(ours.token_text(ours.eos_id()) == "<|endoftext|>");
  const std::vector<std::string> chats = {
      "<|user|>\nHow are you?<|end|>\n<|assistant|>\n  Fine, thanks.<|end|>\n<|endoftext|>",
      "<|user|> \t\n  spaces after<|end|>   <|assistant|>x",
      "a <|placeholder1|> b",
      "a  \n <|placeholder2|>  b",
      "<|placeholder2|><|placeholder2|> <|placeholder1|>",
      "<|end|>",
      " <|end|> ",
      "<|assistant|>\xe3\x80\x80wide space\xc2\xa0<|placeholder2|>",
      "<|end|><|placeholder2|>",
      "text <|end|> <|placeholder2|> text",
      "<|endoftext|> after the EOS, which keeps it",
  };
  const OracleResult theirs = hf_encode(scratch / "phi3", chats, std::nullopt, true);
  REQUIRE(theirs.ids.size() == chats.size());
  for (std::size_t i = 0; i < chats.size(); ++i) {
    INFO("chat " << i << ": \"" << chats[i] << "\"");
    CHECK(ours.encode_document(chats[i]) == theirs.ids[i]);
  }
  // The spaces the tokens absorb are gone: the texts differ and their ids do not.
  CHECK(ours.encode("<|end|>   x") == ours.encode("<|end|>x"));
  CHECK(ours.encode("x \n<|placeholder2|>") == ours.encode("x<|placeholder2|>"));
  // A reader's chunks are never cut in whitespace a token absorbs.
  const llmrdzv::tokenizer::CutPlaces places = ours.cut_places();
  CHECK(places.rstrip.size() == 4);
  CHECK(places.lstrip.size() == 2);
  const std::string text = "one two<|end|> three four";
  CHECK(llmrdzv::tokenizer::last_safe_cut(text, places) == 20);                                     // " four"
  CHECK(llmrdzv::tokenizer::last_safe_cut(std::string_view(text).substr(0, 20), places) == 3);      // not " three"
  CHECK(llmrdzv::tokenizer::last_safe_cut("a b <|placeholder2|>", places) == 1);

  // Next to a config.json whose model_type is phi3 or mistral (a model directory: the hub's, or
  // one this trainer exports), AutoTokenizer reads tokenizer.json as it is, whatever
  // tokenizer_class says: Llama 2's normalizer then puts a "▁" before every text between added
  // tokens. Read there, the ids are HF's again; and the rebuilt (Metaspace) tokenizer.json that
  // save() writes for the LlamaTokenizer reading keeps its ids in such a directory.
  std::vector<std::string> texts = chats;
  for (const std::string& c : parity_cases(16)) texts.push_back(c);
  for (const std::string model_type : {"phi3", "mistral"}) {
    INFO("model_type " << model_type);
    const auto as_hub = scratch / ("hub-" + model_type);
    std::filesystem::copy(scratch / "phi3", as_hub, std::filesystem::copy_options::recursive);
    scratch.write("hub-" + model_type + "/config.json", "{\"model_type\": \"" + model_type + "\"}");
    const Tokenizer as_is = Tokenizer::from_directory(as_hub);
    CHECK(as_is.encode("<|end|>x") != ours.encode("<|end|>x"));  // "▁x" here, "x" rebuilt
    const OracleResult hub = hf_encode(as_hub, texts, std::nullopt, true);
    REQUIRE(hub.ids.size() == texts.size());
    const auto exported = scratch / ("exported-" + model_type);
    ours.save(exported);
    scratch.write("exported-" + model_type + "/config.json", "{\"model_type\": \"" + model_type + "\"}");
    const OracleResult reread = hf_encode(exported, texts, std::nullopt, true);
    REQUIRE(reread.ids.size() == texts.size());
    const Tokenizer ours_again = Tokenizer::from_directory(exported);
    // The as-is reading exported into a Llama directory (whose model type imposes no class): it
    // names no rebuilding class any more, so HF reads it as it is there too.
    const auto as_llama = scratch / ("as-is-in-llama-" + model_type);
    as_is.save(as_llama);
    scratch.write("as-is-in-llama-" + model_type + "/config.json", "{\"model_type\": \"llama\"}");
    const OracleResult in_llama = hf_encode(as_llama, texts, std::nullopt, true);
    REQUIRE(in_llama.ids.size() == texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
      INFO("text " << i << ": \"" << texts[i] << "\"");
      CHECK(as_is.encode_document(texts[i]) == hub.ids[i]);
      CHECK(ours.encode_document(texts[i]) == reread.ids[i]);
      CHECK(ours_again.encode_document(texts[i]) == reread.ids[i]);
      CHECK(as_is.encode_document(texts[i]) == in_llama.ids[i]);
    }
  }
  // A class that rebuilds a byte-level pipeline over this SentencePiece-style vocabulary is refused.
  for (const std::string cls : {"Qwen2Tokenizer", "GPT2Tokenizer"}) {
    const auto dir = scratch / ("as-" + cls);
    std::filesystem::copy(scratch / "phi3", dir, std::filesystem::copy_options::recursive);
    scratch.write("as-" + cls + "/tokenizer_config.json", "{\"tokenizer_class\": \"" + cls + "\", \"eos_token\": \"</s>\"}");
    CHECK_THROWS_WITH(Tokenizer::from_directory(dir), Catch::Contains("tokenizer_class " + cls) &&
                                                          Catch::Contains("which is SentencePiece-style"));
  }
}
