#include "aiter_compat/probe/readings.hpp"

#include <nlohmann/json.hpp>

#include "aiter_compat/probe/support.hpp"

namespace aiter_compat {
namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it != j.end() && it->is_array())
    for (const auto& e : *it)
      if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

std::vector<ProbeError> errors(const json& j) {
  std::vector<ProbeError> out;
  auto it = j.find("errors");
  if (it != j.end() && it->is_array())
    for (const auto& e : *it)
      if (e.is_object()) out.push_back({str(e, "where"), str(e, "error")});
  return out;
}

OpReading op_reading(const json& j) {
  OpReading op;
  op.present = flag(j, "present");
  op.module = str(j, "module");
  if (auto it = j.find("params"); it != j.end() && it->is_array()) {
    std::vector<Param> params;
    for (const auto& p : *it) {
      if (!p.is_object()) continue;
      Param param{str(p, "name"), str(p, "kind"), std::nullopt};
      if (auto d = p.find("default"); d != p.end() && d->is_string()) param.default_repr = d->get<std::string>();
      params.push_back(std::move(param));
    }
    op.params = std::move(params);
  }
  op.decorators = strings(j, "decorators");
  if (auto it = j.find("import_paths"); it != j.end() && it->is_object())
    for (const auto& [module, state] : it->items())
      if (state.is_string()) op.import_paths[module] = state.get<std::string>();
  op.exported = flag(j, "exported");
  op.located_by = str(j, "located_by");
  op.errors = errors(j);
  op.notes = strings(j, "notes");
  if (auto it = j.find("import_error"); it != j.end() && it->is_object())
    op.import_error = ProbeError{str(*it, "where"), str(*it, "error")};
  return op;
}

}  // namespace

std::string_view to_string(Support s) {
  switch (s) {
    case Support::supported: return "supported";
    case Support::unsupported: return "unsupported";
    case Support::unknown: break;
  }
  return "unknown";
}

std::string to_string(Channel c) { return c == Channel::live_import ? "live" : "static"; }

ChannelReading parse_channel_reading(Channel channel, const std::string& json_text) {
  return parse_channel_reading(channel, json::parse(json_text, nullptr, /*allow_exceptions=*/false));
}

ChannelReading parse_channel_reading(Channel channel, const json& doc) {
  ChannelReading r;
  r.channel = channel;
  if (!doc.is_object()) {
    r.failure = "the " + to_string(channel) + " channel returned no readable report";
    return r;
  }
  r.ran = true;
  r.python_version = str(doc, "python");
  const json& inst = doc.value("install", json::object());
  r.install.found = flag(inst, "found");
  r.install.path = str(inst, "path");
  r.install.copies = strings(inst, "copies");
  r.install.distribution = str(inst, "distribution");
  r.install.distribution_path = str(inst, "distribution_path");
  r.install.metadata_version = str(inst, "metadata_version");
  r.install.file_version = str(inst, "file_version");
  r.install.layout = str(inst, "layout");
  r.install.live_path = str(inst, "live_path");
  r.install.foreign = flag(inst, "foreign");
  r.install.errors = errors(inst);
  if (auto it = doc.find("ops"); it != doc.end() && it->is_object())
    for (const auto& [name, op] : it->items())
      if (op.is_object()) r.ops[name] = op_reading(op);
  if (auto it = doc.find("import_error"); it != doc.end() && it->is_object())
    r.import_error = ProbeError{str(*it, "where"), str(*it, "error")};
  if (auto it = doc.find("sink_functions"); it != doc.end() && it->is_array())
    for (const auto& f : *it)
      if (f.is_object()) r.sink_functions.push_back({str(f, "module"), str(f, "function"), str(f, "param")});
  return r;
}

}  // namespace aiter_compat
