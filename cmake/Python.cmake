# cmake/Python.cmake: the Python package `arrayc` (python/, docs/python.md).
#
# The package is pure Python over libarrayc.so (ARRAYC_SHARED_TARGET) through
# ctypes. At build time the target python_package copies it into
# BUILD/python/arrayc, with the C headers whose enums it reads
# (arrayc/include/) and _config.py, which records the build tree's
# libarrayc.so, so that `PYTHONPATH=BUILD/python` works. `cmake --install`
# puts it into ARRAYC_PYTHON_INSTALL_DIR under the prefix, with a _config.py
# naming the installed library (written at install time, so that
# `--prefix` is honoured).
#
# ARRAYC_PYTHON is the interpreter the package is for, and the one its tests
# run with: the first of Python3_EXECUTABLE and /usr/bin/python3 that can
# import NumPy (on Debian the `python3` on PATH may be another one).
find_package(Python3 COMPONENTS Interpreter)
set(_py_candidates ${Python3_EXECUTABLE} /usr/bin/python3)
set(_py_found "")
foreach(py ${_py_candidates})
  if(NOT _py_found AND EXISTS ${py})
    execute_process(COMMAND ${py} -c "import numpy" RESULT_VARIABLE _rc OUTPUT_QUIET
                    ERROR_QUIET)
    if(_rc EQUAL 0)
      set(_py_found ${py})
    endif()
  endif()
endforeach()
if(NOT _py_found)
  set(_py_found ${Python3_EXECUTABLE})
endif()
set(ARRAYC_PYTHON "${_py_found}" CACHE FILEPATH
    "Python interpreter of the arrayc package and its tests (one with NumPy)")

# The site directory relative to the prefix, as the interpreter's sysconfig
# says; Debian's default scheme (posix_local) adds /local itself, which the
# install prefix already says (/usr/local/lib/python3.11/dist-packages and
# /usr/lib/python3.11/dist-packages are both on Debian's sys.path).
set(_py_site "")
if(ARRAYC_PYTHON)
  execute_process(
    COMMAND ${ARRAYC_PYTHON} -c
      "import sysconfig; s = getattr(sysconfig, 'get_default_scheme', lambda: '')(); p = sysconfig.get_path('platlib', vars={'platbase': '@', 'base': '@'}); p = p.replace('@/local/', '@/') if s == 'posix_local' else p; print(p[2:])"
    OUTPUT_VARIABLE _py_site OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    set(_py_site "")
  endif()
endif()
if(NOT _py_site)
  set(_py_site lib/python3/dist-packages)
endif()
set(ARRAYC_PYTHON_INSTALL_DIR "${_py_site}" CACHE STRING
    "Where cmake --install puts the Python package, relative to the prefix")

set(ARRAYC_PYTHON_BUILD_DIR ${PROJECT_BINARY_DIR}/python)
set(_pkg ${ARRAYC_PYTHON_BUILD_DIR}/arrayc)
file(GLOB ARRAYC_PYTHON_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/arrayc/*.py)
set(ARRAYC_PYTHON_HEADERS ${PROJECT_SOURCE_DIR}/include/arrayc/core.h
    ${PROJECT_SOURCE_DIR}/include/arrayc/runtime.h)
file(GENERATE OUTPUT ${_pkg}/_config.py
     CONTENT "# written by CMake: the build tree's libarrayc.so\nLIBRARY = \"$<TARGET_FILE:${ARRAYC_SHARED_TARGET}>\"\n")
add_custom_target(python_package ALL
  COMMAND ${CMAKE_COMMAND} -E make_directory ${_pkg}/include
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${ARRAYC_PYTHON_SOURCES} ${_pkg}
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${ARRAYC_PYTHON_HEADERS} ${_pkg}/include
  DEPENDS ${ARRAYC_PYTHON_SOURCES} ${ARRAYC_PYTHON_HEADERS}
  COMMENT "Python package arrayc in ${ARRAYC_PYTHON_BUILD_DIR}")
add_dependencies(python_package ${ARRAYC_SHARED_TARGET})

install(FILES ${ARRAYC_PYTHON_SOURCES} DESTINATION ${ARRAYC_PYTHON_INSTALL_DIR}/arrayc)
install(FILES ${ARRAYC_PYTHON_HEADERS} DESTINATION ${ARRAYC_PYTHON_INSTALL_DIR}/arrayc/include)
set(_shared_name $<TARGET_FILE_NAME:${ARRAYC_SHARED_TARGET}>)
if(NOT BUILD_SHARED_LIBS)
  set(_shared_name $<TARGET_SONAME_FILE_NAME:${ARRAYC_SHARED_TARGET}>)
endif()
install(CODE "
  set(_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${ARRAYC_PYTHON_INSTALL_DIR}/arrayc\")
  file(WRITE \"\${_dir}/_config.py\"
       \"# written by cmake --install: the installed libarrayc\\nLIBRARY = \\\"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/${_shared_name}\\\"\\n\")
  message(STATUS \"Installing: \${_dir}/_config.py\")")
