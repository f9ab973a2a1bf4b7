// How long a large tokenizer takes to load from tokenizer.json, against the same tokenizer from
// vocab.json + merges.txt in the same run (the baseline), and how much of it is the JSON reader.
// The tokenizer is made here, Llama-3-sized by default (128k tokens): a byte-level BPE grown by
// merging random pairs of existing tokens, so every merge is valid; Tokenizer::save writes both
// forms. Prints the median of --rounds loads of each and, last, one JSON line.
//   tokenizer-bench [--merges N] [--rounds R]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "llmrdzv/io/json.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;
using llmrdzv::tokenizer::Tokenizer;
using Clock = std::chrono::steady_clock;

// vocab.json + merges.txt of a byte-level BPE with `merges` merges of random token pairs.
void write_random_bpe(const fs::path& dir, int merges) {
  const Tokenizer bytes = Tokenizer::bytes();
  std::vector<std::string> tokens;
  for (std::uint32_t id = 0; id < 256; ++id) tokens.push_back(bytes.token_text(id));
  std::unordered_set<std::string> known(tokens.begin(), tokens.end());
  std::mt19937 random(1234);
  std::string merge_lines = "#version: 0.2\n";
  while (static_cast<int>(tokens.size()) < 256 + merges) {
    // Short tokens more often, as real merges are: the second of two draws from the first half.
    const std::string& left = tokens[random() % tokens.size()];
    const std::string& right = tokens[random() % (tokens.size() / 2 + 1)];
    std::string merged = left + right;
    if (merged.size() > 24 || !known.insert(merged).second) continue;
    merge_lines += left + " " + right + "\n";
    tokens.push_back(std::move(merged));
  }
  llmrdzv::json::Object vocab;
  for (std::size_t id = 0; id < tokens.size(); ++id) vocab.emplace_back(tokens[id], static_cast<std::int64_t>(id));
  fs::create_directories(dir);
  std::ofstream(dir / "vocab.json") << llmrdzv::json::write(vocab);
  std::ofstream(dir / "merges.txt") << merge_lines;
}

template <class Load>
double median_ms(int rounds, Load load) {
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    load();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int merges = 127744, rounds = 5;  // 256 bytes + 127744 merges + EOS: 128001 tokens
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--merges" || arg == "--rounds") && i + 1 < argc) {
      (arg == "--merges" ? merges : rounds) = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: tokenizer-bench [--merges N] [--rounds R]\n");
      return 2;
    }
  }
  if (merges < 1 || rounds < 1) {
    std::fprintf(stderr, "tokenizer-bench: --merges and --rounds must be at least 1\n");
    return 2;
  }
  char pattern[] = "/tmp/tokenizer-bench-XXXXXX";
  if (!mkdtemp(pattern)) {
    std::perror("mkdtemp");
    return 1;
  }
  const fs::path dir(pattern);
  write_random_bpe(dir / "pair", merges);
  const Tokenizer made = Tokenizer::from_directory(dir / "pair");
  made.save(dir / "saved");  // both forms
  fs::create_directories(dir / "json");
  fs::rename(dir / "saved" / "tokenizer.json", dir / "json" / "tokenizer.json");
  std::ostringstream text;
  text << std::ifstream(dir / "json" / "tokenizer.json").rdbuf();
  const std::string json_text = text.str();

  const double pair_ms = median_ms(rounds, [&] { Tokenizer::from_directory(dir / "saved"); });
  const double json_ms = median_ms(rounds, [&] { Tokenizer::from_tokenizer_json(dir / "json" / "tokenizer.json"); });
  const double parse_ms = median_ms(rounds, [&] { llmrdzv::json::parse(json_text); });
  const bool same = Tokenizer::from_tokenizer_json(dir / "json" / "tokenizer.json").fingerprint() == made.fingerprint();
  const double mib = static_cast<double>(json_text.size()) / (1 << 20);
  fs::remove_all(dir);

  std::printf("%zu tokens, %d merges; tokenizer.json %.1f MiB; median of %d loads\n", made.vocab_size(), merges, mib, rounds);
  std::printf("%-34s %9s\n", "load", "ms");
  std::printf("%-34s %9.1f\n", "vocab.json + merges.txt (baseline)", pair_ms);
  std::printf("%-34s %9.1f\n", "tokenizer.json", json_ms);
  std::printf("%-34s %9.1f\n", "  of which the JSON parse", parse_ms);
  std::printf("{\"tokens\": %zu, \"tokenizer_json_mib\": %.2f, \"pair_ms\": %.1f, \"tokenizer_json_ms\": %.1f, "
              "\"json_parse_ms\": %.1f, \"tokenizer_json_over_pair\": %.3f, \"same_tokenizer\": %s}\n",
              made.vocab_size(), mib, pair_ms, json_ms, parse_ms, json_ms / pair_ms, same ? "true" : "false");
  return same ? 0 : 1;
}
