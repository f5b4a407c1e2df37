# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-amd/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build-amd/tests/aiter_compat_unit_tests[1]_include.cmake")
include("/work/main/build-amd/tests/aiter_compat_kernel_host_tests[1]_include.cmake")
include("/work/main/build-amd/tests/aiter_compat_launcher_tests[1]_include.cmake")
include("/work/main/build-amd/tests/aiter_compat_hip_launcher_tests[1]_include.cmake")
include("/work/main/build-amd/tests/aiter_compat_cuda_selftest_tests[1]_include.cmake")
include("/work/main/build-amd/tests/aiter_compat_hip_selftest_tests[1]_include.cmake")
include("/work/main/build-amd/tests/aiter_compat_amd_tests[1]_include.cmake")
add_test([=[RouteLaunchGrid.EveryGpuRouteLaunches.no_wgmma]=] "/work/main/build-amd/tests/aiter_compat_launcher_tests" "--gtest_filter=RouteLaunchGrid.EveryGpuRouteLaunches")
set_tests_properties([=[RouteLaunchGrid.EveryGpuRouteLaunches.no_wgmma]=] PROPERTIES  ENVIRONMENT "LD_LIBRARY_PATH=/work/main/build-amd/tests/fake_cuda;AITER_COMPAT_NO_WGMMA=1;AITER_COMPAT_SELFTEST=off" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;82;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[Launcher.PrefillKernelFollowsNoWgmma.set]=] "/work/main/build-amd/tests/aiter_compat_launcher_tests" "--gtest_filter=Launcher.PrefillKernelFollowsNoWgmma")
set_tests_properties([=[Launcher.PrefillKernelFollowsNoWgmma.set]=] PROPERTIES  ENVIRONMENT "LD_LIBRARY_PATH=/work/main/build-amd/tests/fake_cuda;AITER_COMPAT_NO_WGMMA=1;AITER_COMPAT_SELFTEST=off" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;89;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[hip.HipLauncher.DecodeOnGfx942.amd_direct]=] "/work/main/build-amd/tests/aiter_compat_hip_launcher_tests" "--gtest_filter=HipLauncher.DecodeOnGfx942")
set_tests_properties([=[hip.HipLauncher.DecodeOnGfx942.amd_direct]=] PROPERTIES  ENVIRONMENT "LD_LIBRARY_PATH=/work/main/build-amd/tests/fake_hip;AITER_COMPAT_AMD_DIRECT=1;AITER_COMPAT_SELFTEST=off" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;115;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.off]=] "/work/main/build-amd/tests/aiter_compat_cuda_selftest_tests" "--gtest_filter=SelftestEnvironment.ModeIsReadFromTheEnvironment")
set_tests_properties([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.off]=] PROPERTIES  ENVIRONMENT "LD_LIBRARY_PATH=/work/main/build-amd/tests/fake_cuda;AITER_COMPAT_SELFTEST=off" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;133;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.always]=] "/work/main/build-amd/tests/aiter_compat_cuda_selftest_tests" "--gtest_filter=SelftestEnvironment.ModeIsReadFromTheEnvironment")
set_tests_properties([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.always]=] PROPERTIES  ENVIRONMENT "LD_LIBRARY_PATH=/work/main/build-amd/tests/fake_cuda;AITER_COMPAT_SELFTEST=always" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;133;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.first-use]=] "/work/main/build-amd/tests/aiter_compat_cuda_selftest_tests" "--gtest_filter=SelftestEnvironment.ModeIsReadFromTheEnvironment")
set_tests_properties([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.first-use]=] PROPERTIES  ENVIRONMENT "LD_LIBRARY_PATH=/work/main/build-amd/tests/fake_cuda;AITER_COMPAT_SELFTEST=first-use" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;133;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.not-a-mode]=] "/work/main/build-amd/tests/aiter_compat_cuda_selftest_tests" "--gtest_filter=SelftestEnvironment.ModeIsReadFromTheEnvironment")
set_tests_properties([=[SelftestEnvironment.ModeIsReadFromTheEnvironment.not-a-mode]=] PROPERTIES  ENVIRONMENT "LD_LIBRARY_PATH=/work/main/build-amd/tests/fake_cuda;AITER_COMPAT_SELFTEST=not-a-mode" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;133;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[capi_from_c]=] "/work/main/build-amd/tests/capi_from_c")
set_tests_properties([=[capi_from_c]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;141;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[install_consumer]=] "bash" "/work/main/tests/install/check_install.sh" "/work/main/build-amd" "/work/main/build-amd/tests/install_consumer" "0.1.0" "/usr/bin/cmake" "/usr/bin/cc" "Ninja")
set_tests_properties([=[install_consumer]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;146;add_test;/work/main/tests/CMakeLists.txt;0;")
