# Helpers that give every llmserve target the same flags and layout.
#   llmserve_component(NAME <name> DIR <dir> [DEPS ...] [RECURSE])
#     a static library llmserve_<name> from the *.cpp files in <dir> (tests excluded).
#   llmserve_unit_test(NAME <name> SOURCES ... DEPS ... [CPU_ISA_RUNS])
#     a GoogleTest executable, each case registered with ctest (label "unit").

set(LLMSERVE_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
include(GoogleTest)
set(LLMSERVE_WARNINGS -Wall -Wextra -Werror)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 at -O3 reports false -Wrestrict positives inside std::string (GCC bug 105329).
  list(APPEND LLMSERVE_WARNINGS -Wno-restrict)
endif()
set(LLMSERVE_CPU_ARCH_FLAGS -mavx2 -mfma -mf16c -mbmi2)

# RelWithDebInfo keeps line tables only (-g1 after its -g): backtraces, perf and sanitizer
# reports keep function, file and line, and the tree builds in about 30% less time and under half
# the disk of a full -g one (docs/RELIABILITY.md). -DLLMSERVE_FULL_DEBUG_INFO=ON keeps full -g.
option(LLMSERVE_FULL_DEBUG_INFO "RelWithDebInfo with full -g (variables, types) for gdb" OFF)
if(NOT LLMSERVE_FULL_DEBUG_INFO)
  add_compile_options($<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:C,CXX>>:-g1>)
endif()
option(LLMSERVE_UNITY_TESTS "Build unit-test executables as unity batches at -O1" ON)
if(LLMSERVE_SANITIZE)
  add_compile_options(-fsanitize=${LLMSERVE_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${LLMSERVE_SANITIZE})
endif()

function(llmserve_apply_flags target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${LLMSERVE_WARNINGS}>)
  target_include_directories(${target} PUBLIC ${LLMSERVE_ROOT} ${LLMSERVE_ROOT}/kernels/include
                                                ${CMAKE_BINARY_DIR}/generated)
endfunction()

function(llmserve_component)
  cmake_parse_arguments(A "RECURSE" "NAME;DIR" "DEPS;EXCLUDE" ${ARGN})
  if(A_RECURSE)
    file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${A_DIR}/*.cpp)
  else()
    file(GLOB srcs CONFIGURE_DEPENDS ${A_DIR}/*.cpp)
  endif()
  foreach(ex ${A_EXCLUDE})
    list(FILTER srcs EXCLUDE REGEX "${ex}")
  endforeach()
  if(srcs)
    add_library(llmserve_${A_NAME} STATIC ${srcs})
    llmserve_apply_flags(llmserve_${A_NAME})
    target_link_libraries(llmserve_${A_NAME} PUBLIC ${A_DEPS} Threads::Threads)
  else()
    add_library(llmserve_${A_NAME} INTERFACE)
    target_include_directories(llmserve_${A_NAME} INTERFACE ${LLMSERVE_ROOT}
                                                            ${LLMSERVE_ROOT}/kernels/include)
    target_link_libraries(llmserve_${A_NAME} INTERFACE ${A_DEPS})
  endif()
endfunction()

# Each GoogleTest case is its own ctest test (unit_<name>.<Suite>.<Case>, listed when ctest runs),
# so a skipped case shows as "Skipped" in ctest's summary. CPU_ISA_RUNS also links
# tests/unit/cpu_isa_environment.cpp and registers every case again as unit_<name>_avx2.<...>
# with the CPU kernels forced to AVX2 (LLMSERVE_TEST_CPU_ISA); AVX2_FILTER (a gtest filter)
# limits that second run.
function(llmserve_unit_test)
  cmake_parse_arguments(A "CPU_ISA_RUNS" "NAME;AVX2_FILTER" "SOURCES;DEPS" ${ARGN})
  if(NOT A_AVX2_FILTER)
    set(A_AVX2_FILTER "*")
  endif()
  if(A_CPU_ISA_RUNS)
    list(APPEND A_SOURCES ${LLMSERVE_ROOT}/tests/unit/cpu_isa_environment.cpp)
  endif()
  add_executable(unit_${A_NAME} ${A_SOURCES})
  llmserve_apply_flags(unit_${A_NAME})
  # GoogleTest and nlohmann/json take about 5 of a test file's 10 s of parsing: each test
  # executable parses them once into its precompiled header. GCC 12 does not treat the standard
  # headers it reads from a precompiled header as system headers, so its std::string
  # -Warray-bounds and -Wstringop-overflow/-overread false positives (GCC bugs 105651, 105329)
  # would surface in test files: off for tests.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(unit_${A_NAME} PRIVATE
        $<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds$<SEMICOLON>-Wno-stringop-overflow$<SEMICOLON>-Wno-stringop-overread>)
  endif()
  list(FILTER A_SOURCES INCLUDE REGEX "\\.cpp$")
  list(LENGTH A_SOURCES n_sources)
  # A header precompiled for one or two files does not pay, nor (about 20 s per target) for the
  # few files of a unity build: precompiled only for file-by-file builds of 3 files or more.
  if(n_sources GREATER_EQUAL 3 AND NOT LLMSERVE_UNITY_TESTS)
    target_precompile_headers(unit_${A_NAME} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:<gtest/gtest.h$<ANGLE-R>>
      $<$<COMPILE_LANGUAGE:CXX>:<nlohmann/json.hpp$<ANGLE-R>>
      $<$<COMPILE_LANGUAGE:CXX>:<string$<ANGLE-R>>
      $<$<COMPILE_LANGUAGE:CXX>:<vector$<ANGLE-R>>)
  endif()
  # A test file spends most of its compile in parsing the same headers as its neighbours and
  # in optimising GoogleTest's macro expansions: test executables build as unity batches at -O1
  # (the code under test is in the libraries, built at the tree's level). docs/RELIABILITY.md
  # has the figures; -DLLMSERVE_UNITY_TESTS=OFF builds them file by file at the tree's level.
  if(LLMSERVE_UNITY_TESTS)
    set_target_properties(unit_${A_NAME} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
    if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
      # GCC 12's -Wmaybe-uninitialized at -O1 misreads aggregate copies (ucx_transport_test).
      target_compile_options(unit_${A_NAME} PRIVATE
          $<$<COMPILE_LANGUAGE:CXX>:-O1$<SEMICOLON>$<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>>)
    endif()
  endif()
  target_compile_definitions(unit_${A_NAME} PRIVATE
      LLMSERVE_SOURCE_DIR="${LLMSERVE_ROOT}" LLMSERVE_FIXTURES_DIR="${LLMSERVE_ROOT}/tests/fixtures")
  target_link_libraries(unit_${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  gtest_discover_tests(unit_${A_NAME} TEST_PREFIX "unit_${A_NAME}." DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 120 WORKING_DIRECTORY ${LLMSERVE_ROOT} PROPERTIES LABELS unit)
  if(A_CPU_ISA_RUNS)
    gtest_discover_tests(unit_${A_NAME} TEST_PREFIX "unit_${A_NAME}_avx2." DISCOVERY_MODE PRE_TEST
      DISCOVERY_TIMEOUT 120 TEST_FILTER "${A_AVX2_FILTER}" WORKING_DIRECTORY ${LLMSERVE_ROOT}
      PROPERTIES LABELS "unit;avx2" ENVIRONMENT LLMSERVE_TEST_CPU_ISA=avx2)
  endif()
endfunction()

# Adds every immediate subdirectory of the current source dir that has a CMakeLists.txt.
macro(llmserve_add_subdirs)
  file(GLOB _children RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _children)
  foreach(_child ${_children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_child} AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_child}/CMakeLists.txt)
      add_subdirectory(${_child})
    endif()
  endforeach()
endmacro()
