#pragma once
// What `aiter-compat probe` reports: the merged, interpreted view of an install.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "aiter_compat/probe/readings.hpp"
#include "aiter_compat/probe/support.hpp"

namespace aiter_compat {

struct InstallReport {
  bool found = false;
  std::string reason;  // when not found, or found but unusable
  std::string distribution;
  std::string version;
  std::string version_source;  // "distribution metadata", "aiter/_version.py", "unknown"
  bool version_trusted = false;
  std::string version_note;  // why a version is weak, or sources that disagree
  std::string path, layout;
  std::vector<std::string> copies;
  bool foreign = false;
  std::string matrix_entry;  // release entry this install is compared with
  std::string matrix_note;
  std::vector<ProbeError> errors;
};

struct OpReport {
  std::string name;
  bool present = false;
  std::string module;
  std::optional<std::vector<Param>> params;
  std::map<std::string, std::string> import_paths;
  bool exported = false;
  std::string located_by;  // "known path" (the op table's modules), "name search", "" when absent
  Support sinks = Support::unknown;
  std::string sinks_reason;
  std::optional<int> window_arity;  // 2 = (left, right), 3 = (left, right, sink_size)
  Support q_scales = Support::unknown;
  std::string read_by;  // channel whose reading this is
  std::vector<std::string> notes;
  std::vector<ProbeError> errors;
  std::optional<ProbeError> import_error;  // the import path fails to compile there: not callable

  std::vector<std::string> param_names() const;
};

struct NativeModule {
  std::string name, path;
  bool elf_ok = false;
  std::string elf_error;  // not ELF, wrong class or machine, truncated, ...
  std::string machine;
  std::vector<std::string> exports;  // interesting exported C symbols found
  size_t export_count = 0;
  std::optional<bool> loads;  // nullopt: dlopen not tried
  std::string dlerror;
};

struct NativeReport {
  std::vector<std::string> searched;  // folders looked in
  std::vector<NativeModule> modules;
};

struct RuntimeAttempt {
  std::string library;
  std::string how;     // "already loaded", "dlopen", "skipped" (its GPU driver is absent)
  std::string result;  // "3 devices", "no device (hipErrorNoDevice)", dlerror text
};

struct DeviceReport {
  bool present = false;
  std::string vendor;   // "amd" or "nvidia"
  std::string arch;     // gfx942, sm_90, ...
  std::string name;
  int count = 0;
  int multiprocessors = 0;          // of device 0
  std::vector<std::string> archs;   // of every device, by index (hosts may mix GPUs)
  std::string runtime;  // path of the bound runtime library
  std::string how_found;
  std::string reason;   // why none
  std::vector<RuntimeAttempt> attempts;
};

struct QuirkHit {
  std::string id, status, summary, why, effect;
  std::vector<std::string> ops;
};

struct Disagreement {
  std::string what, static_value, live_value;
};

struct ChannelStatus {
  bool ran = false;
  std::string failure;
  std::string python_version;
  std::optional<ProbeError> import_error;
};

struct MatrixStatus {
  std::string source;  // "built-in" or a path
  std::string warning;  // a user override that could not be used
};

struct FallbackKernel {
  std::string name;
  std::vector<std::string> archs;
  bool matches_device = false;
  // The head dims built on each arch, where the family has a list (empty: any up to its limit);
  // the RDNA WMMA tiles have fewer than the other archs.
  std::map<std::string, std::vector<int>> head_dims;
};

struct ProbeReport {
  InstallReport aiter;
  std::vector<OpReport> ops;  // in attention_ops() order
  NativeReport native;
  DeviceReport device;
  std::vector<QuirkHit> quirks;
  std::vector<FallbackKernel> fallback_kernels;
  std::map<std::string, ChannelStatus> channels;
  std::vector<Disagreement> disagreements;
  MatrixStatus matrix;
  // Public functions with a sink-like parameter that compat_matrix.yaml does not describe (the
  // static channel's reading): an entry point that gains sinks, seen the day it appears.
  std::vector<SinkFunction> unknown_sink_functions;

  const OpReport* op(const std::string& name) const;
};

}  // namespace aiter_compat
