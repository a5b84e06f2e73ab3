# Precompiled <ATen/ATen.h> (docs/building.md): parsing it costs ~7 s per translation unit on one
# core, and ~70 of the project's files include it. `roll_aten_pch(target)` makes the target's
# sources that include an ATen header use one precompiled copy; its other sources compile as before.
# Targets built with -fopenmp (engine, bench) get a copy of their own: _OPENMP changes what ATen's
# headers declare, so a header precompiled without it must not serve them.
option(ROLL_PCH "Precompile <ATen/ATen.h> for the sources that include it" ON)

set(ROLL_PCH_HEADERS <ATen/ATen.h> <nlohmann/json.hpp>)

if(ROLL_PCH)
  # The owners of the two precompiled copies: empty libraries with the flags of their users.
  set(_anchor ${CMAKE_BINARY_DIR}/roll_pch_anchor.cpp)
  if(NOT EXISTS ${_anchor})
    file(WRITE ${_anchor} "// Owner of the precompiled ATen header (cmake/aten_pch.cmake).\n")
  endif()
  add_library(roll_pch_plain STATIC ${_anchor})
  target_link_libraries(roll_pch_plain PRIVATE roll_torch nlohmann_json::nlohmann_json)
  target_precompile_headers(roll_pch_plain PRIVATE ${ROLL_PCH_HEADERS})
  add_library(roll_pch_openmp STATIC ${_anchor})
  target_link_libraries(roll_pch_openmp PRIVATE roll_torch nlohmann_json::nlohmann_json OpenMP::OpenMP_CXX)
  target_precompile_headers(roll_pch_openmp PRIVATE ${ROLL_PCH_HEADERS})
  # ccache caches the header's compile too, so a warm cache restores the same .gch bytes and the
  # files that use it hit as well (with the sloppiness scripts/build sets).
  if(CCACHE_PROGRAM)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fpch-preprocess>)
  endif()
endif()

# roll_aten_pch(TARGET [OPENMP]): TARGET's sources that include <ATen/...> use the precompiled copy.
function(roll_aten_pch target)
  if(NOT ROLL_PCH)
    return()
  endif()
  set(owner roll_pch_plain)
  if("OPENMP" IN_LIST ARGN)
    set(owner roll_pch_openmp)
  endif()
  target_precompile_headers(${target} REUSE_FROM ${owner})
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(src ${sources})
    if(NOT src MATCHES "\\.cpp$")
      continue()
    endif()
    if(NOT IS_ABSOLUTE ${src})
      set(src ${source_dir}/${src})
    endif()
    file(STRINGS ${src} aten_includes REGEX "^#include <ATen/")
    if(NOT aten_includes)
      set_source_files_properties(${src} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
