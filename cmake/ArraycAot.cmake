# ArraycAot.cmake: arrayc_add_aot(), a .ac file compiled ahead of time into
# a library target that C programs link (docs/runtime.md, "Ahead of time").
#
# The same file serves the build tree of arrayc (the top CMakeLists.txt
# includes it for examples/aot/) and an installed arrayc (the package config
# of find_package(arrayc) includes it from next to itself), so it uses no
# path of the arrayc source tree: what differs between the two is found
# through the targets and variables each defines.
#
#   arrayc_add_aot(NAME SOURCE file.ac [PREFIX p] [TARGET cpu|gpu] [GPU sm_XY]
#                  [OPTIONS option...])
#
# At build time it runs `arrayc SOURCE -o DIR/p` (with --target=gpu and
# --gpu=sm_XY for the GPU, then OPTIONS as they are: -O3, --cpu=generic,
# --passes=...), where DIR is ${CMAKE_CURRENT_BINARY_DIR}/arrayc_aot/NAME,
# which writes p.h and p.o (cpu) or p.ptx (gpu). The run is repeated when
# SOURCE or the arrayc tool changes (the runtime refuses code that another
# arrayc wrote). NAME is an INTERFACE library; a target that links it
#   - builds after the files are written,
#   - finds p.h (#include "p.h": DIR is on its include path),
#   - links p.o (cpu; a GPU program loads p.ptx at run time from the path
#     arrayc wrote it to, p.h's P_DEFAULT_PATH, or from the path it passes
#     to p_open), and
#   - links libarrayc_rt: arrayc::arrayc_rt when that target exists (an
#     installed arrayc), else arrayc_rt (arrayc's own build tree).
#
#   SOURCE   the .ac file (relative to CMAKE_CURRENT_SOURCE_DIR)
#   PREFIX   the C prefix of the header's names and the files (default NAME,
#            which must then be a C identifier)
#   TARGET   cpu (the default: an object for this host's CPU; OPTIONS
#            --cpu=NAME for another) or gpu
#   GPU      the GPU architecture, sm_XY (gpu only; arrayc's default otherwise)
#   OPTIONS  more arrayc options; not --shared, --emit, --target, --gpu or
#            -o, which choose the files this function expects
#
# The arrayc tool run is ${ARRAYC_EXECUTABLE} when that is set (the package
# config sets it to the installed tool), else the target arrayc_driver
# (arrayc's build tree) or arrayc::arrayc_compiler (an installed arrayc
# whose config predates ARRAYC_EXECUTABLE), else `arrayc` on the PATH.
#
# Example (an installed arrayc):
#   find_package(arrayc REQUIRED)
#   arrayc_add_aot(saxpy SOURCE saxpy.ac)          # saxpy.h, saxpy.o
#   add_executable(app main.c)                     # main.c: #include "saxpy.h"
#   target_link_libraries(app PRIVATE saxpy)
include_guard(GLOBAL)

function(arrayc_add_aot name)
  cmake_parse_arguments(PARSE_ARGV 1 AOT "" "SOURCE;PREFIX;TARGET;GPU" "OPTIONS")
  if(AOT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "arrayc_add_aot(${name}): unknown arguments: ${AOT_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT AOT_SOURCE)
    message(FATAL_ERROR "arrayc_add_aot(${name}): SOURCE file.ac is required")
  endif()
  if(TARGET ${name})
    message(FATAL_ERROR "arrayc_add_aot(${name}): a target of that name exists already")
  endif()
  if(NOT AOT_PREFIX)
    set(AOT_PREFIX ${name})
  endif()
  if(NOT AOT_PREFIX MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "arrayc_add_aot(${name}): the prefix '${AOT_PREFIX}' is not a C "
                        "identifier (give PREFIX)")
  endif()
  if(NOT AOT_TARGET)
    set(AOT_TARGET cpu)
  endif()
  if(NOT AOT_TARGET MATCHES "^(cpu|gpu)$")
    message(FATAL_ERROR "arrayc_add_aot(${name}): TARGET is cpu or gpu, not '${AOT_TARGET}'")
  endif()
  if(AOT_GPU AND NOT AOT_TARGET STREQUAL "gpu")
    message(FATAL_ERROR "arrayc_add_aot(${name}): GPU ${AOT_GPU} needs TARGET gpu")
  endif()
  foreach(opt ${AOT_OPTIONS})
    if(opt MATCHES "^(--shared|--emit|--target|--gpu|-o$)")
      message(FATAL_ERROR "arrayc_add_aot(${name}): OPTIONS may not contain '${opt}' "
                          "(use TARGET and GPU; the files are chosen by this function)")
    endif()
  endforeach()

  # the tool: a file (or a target's file) that the outputs depend on, so that
  # a new arrayc rewrites them
  set(tool_target)
  if(ARRAYC_EXECUTABLE)
    set(tool ${ARRAYC_EXECUTABLE})
  elseif(TARGET arrayc_driver)
    set(tool $<TARGET_FILE:arrayc_driver>)
    set(tool_target arrayc_driver) # built first, and a new build reruns the command
  elseif(TARGET arrayc::arrayc_compiler)
    set(tool $<TARGET_FILE:arrayc::arrayc_compiler>)
  else()
    find_program(ARRAYC_EXECUTABLE arrayc DOC "the arrayc tool (arrayc_add_aot)")
    if(NOT ARRAYC_EXECUTABLE)
      message(FATAL_ERROR "arrayc_add_aot(${name}): no arrayc tool: set ARRAYC_EXECUTABLE, "
                          "or find_package(arrayc) first")
    endif()
    set(tool ${ARRAYC_EXECUTABLE})
  endif()
  # the runtime library the generated code calls
  if(TARGET arrayc::arrayc_rt)
    set(runtime arrayc::arrayc_rt)
  elseif(TARGET arrayc_rt)
    set(runtime arrayc_rt)
  else()
    message(FATAL_ERROR "arrayc_add_aot(${name}): no arrayc_rt target: "
                        "find_package(arrayc) first")
  endif()

  get_filename_component(source "${AOT_SOURCE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/arrayc_aot/${name}")
  set(header "${dir}/${AOT_PREFIX}.h")
  set(flags)
  if(AOT_TARGET STREQUAL "gpu")
    set(code "${dir}/${AOT_PREFIX}.ptx")
    list(APPEND flags --target=gpu)
    if(AOT_GPU)
      list(APPEND flags --gpu=${AOT_GPU})
    endif()
  else()
    set(code "${dir}/${AOT_PREFIX}.o")
    list(APPEND flags --target=cpu)
  endif()

  add_custom_command(
    OUTPUT "${header}" "${code}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}"
    COMMAND ${tool} "${source}" ${flags} ${AOT_OPTIONS} -o "${dir}/${AOT_PREFIX}"
    DEPENDS "${source}" ${tool} ${tool_target}
    COMMENT "arrayc ${AOT_SOURCE} (${AOT_TARGET}): arrayc_aot/${name}/${AOT_PREFIX}.h"
    VERBATIM)
  # An INTERFACE library builds nothing itself: the files come from a
  # custom target, on which every target linking NAME then depends
  # (add_dependencies of an interface library is followed transitively).
  add_custom_target(${name}_arrayc DEPENDS "${header}" "${code}")
  add_library(${name} INTERFACE)
  add_dependencies(${name} ${name}_arrayc)
  target_include_directories(${name} INTERFACE "${dir}")
  if(AOT_TARGET STREQUAL "cpu")
    # a full path: the object goes onto the link line as it is, and a
    # program is linked again when the object changes
    target_link_libraries(${name} INTERFACE "${code}")
  endif()
  target_link_libraries(${name} INTERFACE ${runtime})
endfunction()
