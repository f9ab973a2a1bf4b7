// yaml_document.hpp: yaml-cpp's parser walked document by document with an event handler that
// notices when a document starts where the previous one did (no input consumed: the stuck parse),
// then YAML::Load for the one document's node tree.
#include "llmrdzv/common/yaml_document.hpp"

#include <yaml-cpp/eventhandler.h>

#include <optional>
#include <sstream>

namespace llmrdzv {

namespace {

// Records where each document starts; builds nothing.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  YAML::Mark start;
};

std::string position(const YAML::Mark& mark) {
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

}  // namespace

YAML::Node load_yaml_document(const std::string& text) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts events;
    std::optional<int> previous_start;
    int documents = 0;
    while (parser.HandleNextDocument(events)) {
      if (previous_start == events.start.pos) {
        const char c = events.start.pos >= 0 && static_cast<std::size_t>(events.start.pos) < text.size()
                           ? text[static_cast<std::size_t>(events.start.pos)] : '?';
        throw YamlDocumentError("not valid YAML: " + position(events.start) + ": unexpected '" + std::string(1, c) +
                                "' (outside a [list] or {mapping})");
      }
      previous_start = events.start.pos;
      ++documents;
    }
    if (documents > 1) throw YamlDocumentError("holds " + std::to_string(documents) + " YAML documents; give one");
    return documents == 0 ? YAML::Node() : YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw YamlDocumentError(std::string("not valid YAML: ") + e.what());
  }
}

}  // namespace llmrdzv
