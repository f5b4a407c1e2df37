// The aiter-compat command line (see cli.hpp): `aiter-compat probe` describes the installed AITer.
#include "cli.hpp"
#include "commands.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "aiter_compat/probe/logging.hpp"
#include "aiter_compat/probe/phase_timer.hpp"
#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/probe/render.hpp"
#include "aiter_compat/probe/requirements.hpp"
#include "embedded_python_reader.hpp"

namespace {

// Exit codes, documented in docs/cli.md.
constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitRequirementUnmet = 3;
constexpr int kExitMatrixDiffers = 4;
// kExitSelftestFailed (5) is in selftest_command.cpp.

struct ProbeArgs {
  bool json = false;
  bool live = false;
  bool check_matrix = false;
  bool no_dlopen = false;
  std::string aiter_root, matrix, matrix_entry;
  std::vector<std::string> require;
};

// "require": {met, reasons, families: [{feature, family, served_by, notes, reasons}]}.
nlohmann::json require_json(const std::vector<aiter_compat::RequirementCheck>& checks,
                            const std::vector<std::string>& unmet) {
  nlohmann::json families = nlohmann::json::array();
  for (const auto& c : checks)
    for (const auto& f : c.families)
      families.push_back({{"feature", c.feature},
                          {"family", f.family},
                          {"served_by", f.served_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.served_by)},
                          {"notes", f.notes},
                          {"reasons", f.reasons}});
  return {{"met", unmet.empty()}, {"reasons", unmet}, {"families", families}};
}

// Which serves each family, then what is missing.
void print_requirements(const std::vector<aiter_compat::RequirementCheck>& checks,
                        const std::vector<std::string>& unmet) {
  for (const auto& c : checks) {
    if (c.families.empty()) continue;
    std::cout << "\nrequirement " << c.feature << ": " << (c.met() ? "met" : "not met") << '\n';
    for (const auto& f : c.families) {
      std::cout << "  " << f.family << ": " << (f.served_by.empty() ? "not served" : f.served_by) << '\n';
      for (const auto& n : f.notes) std::cout << "    note: " << n << '\n';
    }
  }
  if (unmet.empty()) return;
  std::cout << "\nrequirement not met:\n";
  for (const auto& r : unmet) std::cout << "  " << r << '\n';
}

int run_probe_command(const ProbeArgs& args) {
  aiter_compat::ProbeOptions options;
  options.aiter_root = args.aiter_root;
  options.live = args.live;
  options.dlopen = !args.no_dlopen;
  options.matrix_path = args.matrix;
  options.matrix_entry = args.matrix_entry;
  aiter_compat::EmbeddedPythonReader python;
  aiter_compat::ProbeReport report = aiter_compat::run_probe(options, python);

  aiter_compat::PhaseTimer render_timer("checks and output");
  std::vector<std::string> unmet, diffs;
  std::vector<aiter_compat::RequirementCheck> checks;
  for (const auto& feature : args.require) {
    checks.push_back(aiter_compat::check_requirement(report, feature));
    for (const auto& reason : checks.back().unmet) unmet.push_back(feature + ": " + reason);
  }
  if (args.check_matrix) {
    std::string source, warning;
    const auto& matrix = aiter_compat::load_matrix(args.matrix, &source, &warning);
    diffs = aiter_compat::matrix_differences(report, matrix);
  }

  if (args.json) {
    nlohmann::json j = aiter_compat::to_json(report);
    if (!args.require.empty()) j["require"] = require_json(checks, unmet);
    if (args.check_matrix) j["check_matrix"] = {{"matches", diffs.empty()}, {"differences", diffs}};
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << aiter_compat::to_text(report);
    print_requirements(checks, unmet);
    if (args.check_matrix) {
      if (diffs.empty()) {
        std::cout << "\nmatrix: detected capabilities match entry " << report.aiter.matrix_entry << '\n';
      } else {
        std::cout << "\nmatrix differences:\n";
        for (const auto& d : diffs) std::cout << "  " << d << '\n';
      }
    }
  }
  if (!unmet.empty()) return kExitRequirementUnmet;
  if (!diffs.empty()) return kExitMatrixDiffers;
  return kExitOk;
}

// The other subcommands' options; what each runs is in its own file (commands.hpp).
CLI::App* add_selftest_command(CLI::App& app, aiter_compat::cli::SelftestArgs& args) {
  CLI::App* c = app.add_subcommand(
      "selftest", "Check every fallback GPU kernel family built for this GPU against the CPU reference (exit 5 if one fails)");
  c->add_flag("--json", args.json, "Print the rows as JSON (docs/selftest.md)");
  c->add_option("--device", args.device, "Check this device only (default: every device found)");
  c->add_option("--dtype", args.dtypes, "Only these dtypes (bf16, f16, f32; repeatable)");
  c->add_option("--head-dim", args.head_dims, "Check at these head dims (default 64 and 128; repeatable)");
  return c;
}

CLI::App* add_bench_command(CLI::App& app) {
  CLI::App* c = app.add_subcommand("bench", "Time GPT-OSS-shaped attention on this GPU: fallback kernels, AITer, torch SDPA");
  c->allow_extras();
  c->prefix_command();  // everything after `bench` goes to python -m aiter_compat.bench
  c->footer("Options: --json FILE, --quick, --only REGEX (python -m aiter_compat.bench --help)");
  return c;
}

// Flushes C++ and C streams on every return: inside Python the process does not exit here, and
// Python's own sys.stdout buffer is separate from these.
struct FlushOnReturn {
  ~FlushOnReturn() {
    std::cout.flush();
    std::fflush(stdout);
    std::fflush(stderr);
  }
};

}  // namespace

namespace aiter_compat::cli {

int run(int argc, const char* const* argv) {
  FlushOnReturn flush;
  // Diagnostics go to stderr so --json output stays clean; AITER_COMPAT_LOG_LEVEL=debug for more.
  // Set once per process: the Python extension may run the command line several times.
  logging::use_command_line_logger();
  // Named here, not from argv[0]: `python -m aiter_compat` would otherwise show __main__.py.
  CLI::App app{"aiter-compat: what the installed AITer can do, and how attention calls are routed", "aiter-compat"};
  app.set_version_flag("--version", std::string("aiter-compat ") + AITER_COMPAT_VERSION,
                       "Print aiter-compat's version and exit");
  app.require_subcommand(1);
  app.footer("Options, exit codes and environment: docs/cli.md; the JSON report: docs/probe-json.md");
  ProbeArgs args;
  CLI::App* probe = app.add_subcommand("probe", "Describe the installed AITer, its native modules and the GPU");
  probe->add_flag("--json", args.json, "Print the report as JSON (schema: docs/probe-json.md)");
  probe->add_option("--aiter-root", args.aiter_root,
                    "Probe the aiter package in DIR (site-packages, unpacked wheel or source checkout)")
      ->check(CLI::ExistingDirectory);
  probe->add_flag("--live", args.live, "Also import aiter and read inspect.signature (imports torch)");
  probe->add_option("--require", args.require,
                    "Exit 3 with the reasons unless FEATURE is available here: sinks (prefill and decode of a "
                    "model with sinks, each by AITer or a fallback kernel for this GPU), or sinks:OP for one "
                    "entry point")
      ->check(CLI::IsMember(aiter_compat::known_requirements()));
  probe->add_flag("--check-matrix", args.check_matrix,
                  "Exit 4 with a diff unless the detected capabilities equal the matrix entry");
  probe->add_option("--matrix", args.matrix, "compat_matrix.yaml to use instead of the built-in one");
  probe->add_option("--matrix-entry", args.matrix_entry, "Compare with this release entry (for weak versions)");
  probe->add_flag("--no-dlopen", args.no_dlopen, "Read native modules' ELF exports only; do not try loading them");
  aiter_compat::cli::SelftestArgs selftest_args;
  CLI::App* selftest = add_selftest_command(app, selftest_args);
  aiter_compat::cli::BenchArgs bench_args;
  CLI::App* bench = add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (probe->parsed()) {
    aiter_compat::PhaseTimer t("main (to exit)");
    return run_probe_command(args);
  }
  if (selftest->parsed()) return aiter_compat::cli::run_selftest_command(selftest_args);
  if (bench->parsed()) {
    bench_args.passthrough = bench->remaining();
    return aiter_compat::cli::run_bench_command(bench_args);
  }
  return kExitUsage;
}

}  // namespace aiter_compat::cli
