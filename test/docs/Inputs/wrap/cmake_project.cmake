# test/docs/check_snippets.py's wrapper for install.md's CMake fragments:
# a project of the document's files (saxpy.ac, main.c, jit.c) that finds
# the installed arrayc (CMAKE_PREFIX_PATH) and holds the fragment; the
# programs it defines (app, jit) run once built, so that a program that
# fails fails the build.
cmake_minimum_required(VERSION 3.20)
project(doc_consumer LANGUAGES C)
find_package(arrayc REQUIRED)
# @SNIPPET@
foreach(program app jit)
  if(TARGET ${program})
    add_custom_command(TARGET ${program} POST_BUILD COMMAND ${program} VERBATIM)
  endif()
endforeach()
