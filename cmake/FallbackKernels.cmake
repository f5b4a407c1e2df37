# Builds fallback_kernels/gpu/attention_kernels.hip into one code object per arch in
# AITER_COMPAT_GPU_ARCHS and embeds them: gfx* with clang's HIP device pass (no HIP headers, no
# device libraries: the kernels use clang builtins only), sm_* with nvcc. An arch whose compiler
# is missing, or does not know it, is skipped with a message; the rest of the build goes on.
set(AITER_COMPAT_GPU_ARCHS "gfx90a;gfx942;gfx950;sm_90" CACHE STRING "GPU archs to build the fallback kernels for")
# clang 20 and later know gfx950 (MI350X/MI355X); Debian's clang-22 (with lld-22) is the one the
# build is tested with. An older clang still builds gfx90a and gfx942, and says why gfx950 is skipped.
find_program(AITER_COMPAT_HIP_CLANG NAMES clang-22 clang-21 clang-20 clang-19 clang-18 clang-17 clang
             DOC "clang with AMDGPU support, for the gfx* code objects")
find_program(AITER_COMPAT_NVCC NAMES nvcc PATHS /usr/local/cuda/bin DOC "nvcc, for the sm_* code objects")

set(kernel_source ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/attention_kernels.hip)
set(kernel_deps ${kernel_source} ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/portability.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/kernel_params.h
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/kernel_common.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/key_range.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/kv_rows.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/row_finish.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/row_store.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/arch_contract.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/matrix_ops.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/warpgroup_ops.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/tiled_attention.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/tile_context.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/tiles_nvidia.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/tiles_amd.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/mfma_ops.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/fragment_layouts.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/fp8_convert.hpp
                ${PROJECT_SOURCE_DIR}/fallback_kernels/gpu/fp8_device.hpp)
set(AITER_COMPAT_BUILT_ARCHS "")
set(registry_entries "")
set(registry_decls "")
set(embedded_sources "")
foreach(arch ${AITER_COMPAT_GPU_ARCHS})
  set(object ${CMAKE_BINARY_DIR}/kernels/attention_${arch}.co)
  if(arch MATCHES "^gfx")
    if(NOT AITER_COMPAT_HIP_CLANG)
      message(STATUS "fallback kernels: ${arch} skipped: no clang with AMDGPU support found")
      continue()
    endif()
    execute_process(COMMAND ${AITER_COMPAT_HIP_CLANG} -x hip --offload-arch=${arch} --cuda-device-only -nogpulib
                            -nogpuinc -fsyntax-only -
                    INPUT_FILE /dev/null RESULT_VARIABLE knows ERROR_VARIABLE why OUTPUT_QUIET)
    if(NOT knows EQUAL 0)
      string(REGEX REPLACE "\n.*" "" why "${why}")
      message(STATUS "fallback kernels: ${arch} skipped: ${AITER_COMPAT_HIP_CLANG} does not build it (${why}); "
                     "install clang-22 and lld-22 (debian-packages.txt) for every AMD arch")
      continue()
    endif()
    add_custom_command(OUTPUT ${object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/kernels
      COMMAND ${AITER_COMPAT_HIP_CLANG} -x hip --offload-arch=${arch} --cuda-device-only --no-gpu-bundle-output
              -nogpulib -nogpuinc -O3 -std=c++20 -o ${object} ${kernel_source}
      DEPENDS ${kernel_deps} COMMENT "Fallback kernels for ${arch}")
  elseif(arch MATCHES "^sm_([0-9]+)$")
    if(NOT AITER_COMPAT_NVCC)
      message(STATUS "fallback kernels: ${arch} skipped: nvcc not found")
      continue()
    endif()
    # sm_90 is built as sm_90a (the code object runs on every sm_90 GPU) for the warpgroup MMA
    # kernels; the -gencode form, since nvcc 13.0's -arch=sm_90a also runs a plain sm_90 pass.
    if(arch STREQUAL "sm_90")
      set(arch_flags -gencode=arch=compute_90a,code=sm_90a)
    else()
      set(arch_flags -arch=${arch})
    endif()
    add_custom_command(OUTPUT ${object}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/kernels
      COMMAND ${AITER_COMPAT_NVCC} -x cu ${arch_flags} -cubin -O3 -std=c++20 --expt-relaxed-constexpr -o ${object} ${kernel_source}
      DEPENDS ${kernel_deps} COMMENT "Fallback kernels for ${arch}")
  else()
    message(FATAL_ERROR "AITER_COMPAT_GPU_ARCHS: '${arch}' is neither gfx* nor sm_*")
  endif()
  embed_text(${CMAKE_BINARY_DIR}/kernels/embedded_${arch}.cpp code_object_${arch} ${object} BINARY)
  list(APPEND embedded_sources ${CMAKE_BINARY_DIR}/kernels/embedded_${arch}.cpp)
  list(APPEND AITER_COMPAT_BUILT_ARCHS ${arch})
  string(APPEND registry_decls "extern const unsigned char code_object_${arch}[];\nextern const std::size_t code_object_${arch}_size;\n")
  string(APPEND registry_entries "    {\"${arch}\", code_object_${arch}, code_object_${arch}_size},\n")
endforeach()
message(STATUS "fallback kernels built for: ${AITER_COMPAT_BUILT_ARCHS}")

file(WRITE ${CMAKE_BINARY_DIR}/kernels/code_object_registry.cpp.in
  "// Generated by cmake/FallbackKernels.cmake; do not edit.\n"
  "#include \"aiter_compat/gpu_runtime/code_objects.hpp\"\n\nnamespace aiter_compat::embedded {\n${registry_decls}}\n\n"
  "namespace aiter_compat {\n\nconst std::vector<CodeObject>& code_objects() {\n"
  "  using namespace embedded;\n  static const std::vector<CodeObject> objects = {\n${registry_entries}  };\n"
  "  return objects;\n}\n\n}  // namespace aiter_compat\n")
configure_file(${CMAKE_BINARY_DIR}/kernels/code_object_registry.cpp.in ${CMAKE_BINARY_DIR}/kernels/code_object_registry.cpp
               COPYONLY)
# The host GPU runtime: driver tables, device queries, the kernel table, the launcher, and the
# code objects embedded in it. Device code (fallback_kernels/gpu) is included for kernel_params.h,
# the one struct the kernels and the host share.
add_library(aiter_compat_gpu_runtime STATIC
  gpu_runtime/src/driver_api.cpp
  gpu_runtime/src/family_verdicts.cpp
  gpu_runtime/src/kernel_table.cpp
  gpu_runtime/src/launch.cpp
  gpu_runtime/src/runtime.cpp
  ${CMAKE_BINARY_DIR}/kernels/code_object_registry.cpp ${embedded_sources})
target_include_directories(aiter_compat_gpu_runtime PUBLIC gpu_runtime/include fallback_kernels/gpu)
target_link_libraries(aiter_compat_gpu_runtime PRIVATE ${CMAKE_DL_LIBS})
