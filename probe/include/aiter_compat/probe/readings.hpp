#pragma once
// Raw facts one Python-side channel (static or live) read from an AITer install. Plain data:
// interpreting them (sinks supported? which quirks?) happens in capabilities.cpp and quirks.cpp.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace aiter_compat {

enum class Channel { static_ast, live_import };
std::string to_string(Channel c);

struct ProbeError {
  std::string where;  // file, module or step
  std::string error;  // "SyntaxError: invalid syntax (line 3)", dlerror text, ...
};

struct Param {
  std::string name;
  std::string kind;                    // inspect.Parameter kind name
  std::optional<std::string> default_repr;
  bool operator==(const Param&) const = default;
};

struct OpReading {
  bool present = false;
  std::string module;  // defining module
  std::optional<std::vector<Param>> params;  // nullopt: present but parameters unreadable
  std::vector<std::string> decorators;
  std::map<std::string, std::string> import_paths;  // module -> defined/alias of X/absent/...
  bool exported = false;  // reachable as aiter.<name>
  std::string located_by;  // "known path", "name search", or "" when not found
  std::vector<ProbeError> errors;
  std::vector<std::string> notes;
  // A package above the module (aiter/__init__.py, ...) that does not compile: importing the
  // entry point fails there (also among errors).
  std::optional<ProbeError> import_error;
};

struct InstallReading {
  bool found = false;
  std::string path;  // the aiter package folder
  std::vector<std::string> copies;  // every aiter package on the search path
  std::string distribution, distribution_path, metadata_version, file_version, layout;
  std::string live_path;  // where `import aiter` really loaded it from (live channel)
  bool foreign = false;   // an unrelated package named aiter
  std::vector<ProbeError> errors;
};

// A public function of the package with a sink-like parameter (sink, sinks, sink_ptr,
// attn_sink) that the op table does not describe.
struct SinkFunction {
  std::string module, function, param;
  bool operator==(const SinkFunction&) const = default;
};

struct ChannelReading {
  Channel channel = Channel::static_ast;
  bool ran = false;
  std::string failure;  // why the channel could not run at all (no interpreter, ...)
  std::string python_version;
  InstallReading install;
  std::map<std::string, OpReading> ops;
  std::optional<ProbeError> import_error;  // live: import aiter raised
  std::vector<SinkFunction> sink_functions;  // static: functions with a sink parameter the op table lacks
};

// Reads the report the Python side returns; a malformed document becomes a failed reading.
ChannelReading parse_channel_reading(Channel channel, const nlohmann::json& doc);
ChannelReading parse_channel_reading(Channel channel, const std::string& json_text);

// The Python side behind an interface, so the core library needs no libpython: the CLI plugs
// in an embedded interpreter, the Python module the host one, and tests a fake.
class PythonReader {
 public:
  virtual ~PythonReader() = default;
  virtual ChannelReading read(Channel channel, const std::string& aiter_root) = 0;
};

}  // namespace aiter_compat
