// `aiter-compat selftest`: the self-test of every family on the present GPU, as a table or JSON.
#include <cstdlib>
#include <iostream>

#include "aiter_compat/probe/logging.hpp"
#include "aiter_compat/shim/selftest_report.hpp"
#include "commands.hpp"

namespace aiter_compat::cli {

int run_selftest_command(const SelftestArgs& args) {
  // The table says what failed and why; the library's warnings would say it again on stderr.
  if (!std::getenv("AITER_COMPAT_LOG_LEVEL")) logging::set_library_level(logging::Level::err);
  selftest::Run run;
  try {
    run = selftest::run_on_present_gpus(/*fresh=*/true, args.device >= 0 ? std::optional<int>(args.device) : std::nullopt,
                                        args.dtypes, args.head_dims);
  } catch (const ArgumentError& e) {
    std::cerr << "aiter-compat selftest: " << e.what() << '\n';
    return 2;
  }
  const bool failed = selftest::any_failed(run.rows);
  if (args.json) {
    nlohmann::json j = {{"gpu", run.gpu_present},
                        {"vendor", run.vendor},
                        {"no_gpu", run.gpu_present ? nlohmann::json(nullptr) : nlohmann::json(run.no_gpu)},
                        {"passed", !failed},
                        {"families", selftest::to_json(run.rows)}};
    std::cout << j.dump(2) << '\n';
  } else if (!run.gpu_present) {
    std::cout << "no GPU to check: " << run.no_gpu << '\n';
  } else {
    std::cout << selftest::to_table(run.rows) << (failed ? "FAILED: calls on these families go elsewhere\n" : "all passed\n");
  }
  return failed ? kExitSelftestFailed : 0;
}

}  // namespace aiter_compat::cli
