// Runs the HF oracle script and parses its output (see hf_oracle.hpp).
#include "hf_oracle.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace llmrdzv::test {
namespace {

std::string hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    out.push_back(kDigits[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kDigits[static_cast<unsigned char>(c) & 15]);
  }
  return out;
}

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace

namespace {

OracleResult run_oracle(const std::filesystem::path& dir, const std::vector<std::string>& cases,
                        const std::optional<OracleTraining>& training, bool with_bos,
                        const std::optional<std::filesystem::path>& resave) {
  const std::filesystem::path cases_file = dir.string() + ".cases";
  const std::filesystem::path out_file = dir.string() + ".ids";
  {
    std::ofstream out(cases_file, std::ios::trunc);
    for (const std::string& c : cases) out << hex(c) << "\n";
  }
  std::string command = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_TOKENIZER_ORACLE + " " + quoted(dir) +
                        " " + quoted(cases_file) + " " + quoted(out_file);
  if (training) {
    command += " --train " + quoted(training->corpus) + " --vocab-size " + std::to_string(training->vocab_size);
    if (!training->with_eos) command += " --no-eos";
    if (training->keep_newlines) command += " --keep-newlines";
    if (!training->make.empty()) command += " --make " + training->make;
  }
  if (with_bos) command += " --bos";
  if (resave) command += " --resave " + quoted(*resave);
  if (std::system(command.c_str()) != 0) throw std::runtime_error("HF oracle failed: " + command);

  OracleResult result;
  std::ifstream in(out_file);
  std::string line;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!std::getline(in, line)) throw std::runtime_error("HF oracle output is short");
    std::istringstream fields(line);
    std::vector<std::uint32_t> ids;
    for (std::uint32_t id; fields >> id;) ids.push_back(id);
    result.ids.push_back(std::move(ids));
  }
  char loader[128] = {};
  long long bos = -1;
  if (!std::getline(in, line) ||
      std::sscanf(line.c_str(), "eos=%u bos=%lld vocab=%zu loader=%127s", &result.eos, &bos, &result.vocab_size, loader) != 4) {
    throw std::runtime_error("HF oracle output lacks its eos/bos/vocab/loader line");
  }
  if (bos >= 0) result.bos = static_cast<std::uint32_t>(bos);
  result.loader = loader;
  std::filesystem::remove(cases_file);
  std::filesystem::remove(out_file);
  return result;
}

}  // namespace

OracleResult hf_encode(const std::filesystem::path& dir, const std::vector<std::string>& cases,
                       const std::optional<OracleTraining>& training, bool with_bos) {
  return run_oracle(dir, cases, training, with_bos, std::nullopt);
}

void hf_resave(const std::filesystem::path& dir, const std::filesystem::path& dest) {
  run_oracle(dir, {"x"}, std::nullopt, false, dest);
}

}  // namespace llmrdzv::test
