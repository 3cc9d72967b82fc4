# xgrammar (structured outputs): its C++ core, built once by scripts/build-xgrammar.sh from the
# pinned PyPI sdist into LLMSERVE_DEPS_DIR and shared by every build dir (plain, sanitizer,
# fuzz). Imported here as xgrammar::xgrammar.
set(LLMSERVE_DEPS_DIR ${CMAKE_CURRENT_LIST_DIR}/../.deps CACHE PATH
    "Where third-party sources built from their release archives live (git-ignored)")
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../scripts/build-xgrammar.sh _xg_version_line
     REGEX "^VERSION=")
string(REGEX REPLACE "^VERSION=" "" LLMSERVE_XGRAMMAR_VERSION "${_xg_version_line}")
set(_xg_root ${LLMSERVE_DEPS_DIR}/xgrammar-${LLMSERVE_XGRAMMAR_VERSION})
if(NOT EXISTS ${_xg_root}/.built)
  message(STATUS "xgrammar ${LLMSERVE_XGRAMMAR_VERSION}: fetching and building into ${_xg_root}")
  execute_process(COMMAND ${CMAKE_CURRENT_LIST_DIR}/../scripts/build-xgrammar.sh
                          ${LLMSERVE_DEPS_DIR} RESULT_VARIABLE _xg_rc)
  if(NOT _xg_rc EQUAL 0)
    message(FATAL_ERROR "xgrammar: scripts/build-xgrammar.sh failed (exit ${_xg_rc}); it needs "
                        "network access to PyPI once, then works from its cache")
  endif()
endif()
add_library(xgrammar::xgrammar STATIC IMPORTED GLOBAL)
set_target_properties(xgrammar::xgrammar PROPERTIES
  IMPORTED_LOCATION ${_xg_root}/build/libxgrammar.a
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
    "${_xg_root}/src/include;${_xg_root}/src/3rdparty/dlpack/include;${_xg_root}/src/3rdparty/picojson"
  INTERFACE_INCLUDE_DIRECTORIES
    "${_xg_root}/src/include;${_xg_root}/src/3rdparty/dlpack/include;${_xg_root}/src/3rdparty/picojson"
  INTERFACE_COMPILE_DEFINITIONS "XGRAMMAR_ENABLE_CPPTRACE=0")
