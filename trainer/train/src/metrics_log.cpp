// JSON lines for metrics_log.hpp, written with the project's JSON writer (llmrdzv::io_core).
#include "llmrdzv/train/metrics_log.hpp"

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace llmrdzv::train {

json::Value metric(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

namespace {

// The byte offset of the first line past `resumed_step` (or not a JSON object) in `path`, and how
// many lines follow from there; nullopt when every line stays.
std::optional<std::pair<std::uint64_t, std::size_t>> resume_cut(const std::string& path, std::int64_t resumed_step) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::uint64_t offset = 0;
  std::optional<std::uint64_t> cut;
  std::size_t after = 0;
  for (std::string line; std::getline(in, line);) {
    if (!cut) {
      bool keep = false;
      try {
        const json::Value record = json::parse(line);
        const json::Value* step = record.is_object() ? record.find("step") : nullptr;
        keep = record.is_object() && (step == nullptr || step->as_integer() <= resumed_step);
      } catch (const std::exception&) {
        keep = false;  // torn or foreign: nothing after it is trusted either
      }
      if (!keep) cut = offset;
    }
    if (cut) ++after;
    offset += line.size() + 1;
  }
  if (!cut) return std::nullopt;
  return std::pair{*cut, after};
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, std::optional<std::int64_t> resumed_step) : path_(path) {
  if (resumed_step) {
    if (const auto cut = resume_cut(path, *resumed_step)) {
      std::error_code error;
      std::filesystem::resize_file(path, cut->first, error);
      if (error) throw std::runtime_error("cannot cut metrics file '" + path + "' back to step " +
                                          std::to_string(*resumed_step) + ": " + error.message());
      removed_lines_ = cut->second;
    }
  }
  out_.open(path, std::ios::app);
  if (!out_) throw std::runtime_error("cannot open metrics file '" + path + "' for writing");
}

void MetricsLog::write(const json::Object& record) {
  out_ << json::write(record) << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error("cannot write metrics file '" + path_ + "'");
}

}  // namespace llmrdzv::train
