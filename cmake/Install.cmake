# cmake/Install.cmake: what `cmake --install` puts where, and how other
# projects find it afterwards (docs/install.md is the user's side of this).
#
#   bin/                         arrayc, arrayc-opt, arrayc-run
#   include/arrayc/              the public headers and ops.def
#   LIBDIR/                      libarrayc_rt.so(.0, .0.1.0), libarrayc_rt.a,
#                                libarrayc.a and libarrayc.so.0(.1.0), no name link
#                                (only a shared libarrayc with BUILD_SHARED_LIBS)
#   PYTHON_SITE/arrayc/          the Python package (cmake/Python.cmake)
#   LIBDIR/cmake/arrayc/         arrayc-config.cmake, arrayc-config-version.cmake,
#                                arrayc-targets*.cmake, ArraycAot.cmake (arrayc_add_aot)
#   LIBDIR/pkgconfig/            arrayc_rt.pc, arrayc.pc
# and, when the distributed layer is built (ARRAYC_MPI):
#   include/arrayc/dist.h
#   LIBDIR/libarrayc_dist.a      the distributed layer (docs/distributed.md)
#   LIBDIR/pkgconfig/arrayc_dist.pc
#
# LIBDIR is GNUInstallDirs' CMAKE_INSTALL_LIBDIR ("lib", or lib/<multiarch>
# under /usr on Debian). find_package(arrayc) gives the imported targets
#   arrayc::arrayc_rt          libarrayc_rt.so: the runtime of ahead-of-time code
#   arrayc::arrayc_rt_static   libarrayc_rt.a (carries -lffi -lm -ldl and threads)
#   arrayc::arrayc             libarrayc: the compiler and JIT (carries LLVM)
#   arrayc::arrayc_compiler    the `arrayc` tool (ARRAYC_EXECUTABLE is its path)
#   arrayc::arrayc-opt, arrayc::arrayc-run
#   arrayc::dist               libarrayc_dist.a (ARRAYC_MPI builds only): carries
#                              arrayc::arrayc and MPI::MPI_C (the config finds MPI;
#                              COMPONENTS dist requires it)
# and the function arrayc_add_aot (cmake/ArraycAot.cmake).
#
# Included once, at the end of the top CMakeLists.txt, when every target
# exists. The targets' include directories are $<BUILD_INTERFACE:...> and
# $<INSTALL_INTERFACE:include> there; what cannot be exported as it is in
# the build tree (pkg-config's PkgConfig::FFI target) is named plainly for
# the install interface.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ARRAYC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/arrayc)

# ---- libraries, tools and headers ------------------------------------------------
# The exported name of the `arrayc` tool: its target is arrayc_driver (the
# name `arrayc` is the library's), and arrayc::arrayc is the library.
set_target_properties(arrayc_driver PROPERTIES EXPORT_NAME arrayc_compiler)

# Installed tools find a shared libarrayc (BUILD_SHARED_LIBS) beside them in
# ../LIBDIR, and LLVM's shared library where they were linked against it
# (INSTALL_RPATH_USE_LINK_PATH adds the link directories outside this
# project, such as /usr/lib/llvm-19/lib), wherever the prefix is moved.
set_target_properties(arrayc_driver arrayc-opt arrayc-run PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
  INSTALL_RPATH_USE_LINK_PATH ON)
if(BUILD_SHARED_LIBS)
  set_target_properties(arrayc PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endif()

# libarrayc.so.0 beside the static libarrayc.a (arrayc_shared: what the
# Python package loads; exported as arrayc::arrayc_shared), LLVM found as
# when it was linked. Without the libarrayc.so name link: `-larrayc`
# (pkg-config's arrayc.pc) keeps linking the static library.
if(TARGET arrayc_shared)
  set_target_properties(arrayc_shared PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS arrayc_shared EXPORT arrayc-targets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)
endif()
install(TARGETS arrayc arrayc_rt arrayc_rt_static arrayc_driver arrayc-opt arrayc-run
        EXPORT arrayc-targets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# arrayc/dist.h goes with libarrayc_dist, only when the distributed layer is
# built (it includes <mpi.h>).
if(TARGET arrayc_dist)
  set(_dist_h_exclude "")
else()
  set(_dist_h_exclude PATTERN "dist.h" EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/arrayc
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.def" ${_dist_h_exclude})

# libarrayc_dist stays a static library, exported as arrayc::dist. It is
# built on libarrayc's internals (the strategy reads the IR, errors are
# made with the IR's diagnostics), which libarrayc.so does not export; a
# libarrayc_dist.so would have to carry a second copy of the compiler, and
# a program would then hold two (the one it links for ac_context_create
# and the one inside), with every AC_API symbol defined twice. Static, it
# links with the static libarrayc that arrayc::arrayc and arrayc.pc give:
# one compiler per program. Its interface carries arrayc::arrayc and
# MPI::MPI_C, which arrayc-config.cmake finds again (quietly, or required
# with find_package(arrayc COMPONENTS dist)).
set(ARRAYC_CONFIG_DIST OFF)
if(TARGET arrayc_dist)
  set(ARRAYC_CONFIG_DIST ON)
  set_target_properties(arrayc_dist PROPERTIES EXPORT_NAME dist)
  install(TARGETS arrayc_dist EXPORT arrayc-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# ---- find_package(arrayc) ------------------------------------------------------------
install(EXPORT arrayc-targets NAMESPACE arrayc:: FILE arrayc-targets.cmake
        DESTINATION ${ARRAYC_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/arrayc-config.cmake.in
  ${PROJECT_BINARY_DIR}/arrayc-config.cmake
  INSTALL_DESTINATION ${ARRAYC_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x releases: a new minor release may change the API, and ahead-of-time
# files are accepted only by the runtime of the compiler that wrote them.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/arrayc-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/arrayc-config.cmake
        ${PROJECT_BINARY_DIR}/arrayc-config-version.cmake
        DESTINATION ${ARRAYC_INSTALL_CMAKEDIR})
# arrayc_add_aot(); the config includes it when it is there
install(FILES ${PROJECT_SOURCE_DIR}/cmake/ArraycAot.cmake
        DESTINATION ${ARRAYC_INSTALL_CMAKEDIR} OPTIONAL)

# ---- pkg-config ----------------------------------------------------------------------
# The .pc files are made from cmake/*.pc.in in two steps: at configure time
# everything but the prefix is filled in (the prefix placeholder is kept by
# substituting it for itself); at install time the prefix of that install,
# which `cmake --install --prefix` may change, completes them.
set(ARRAYC_PC_PREFIX "@ARRAYC_PC_PREFIX@")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(ARRAYC_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(ARRAYC_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
# LLVM as llvm-config named it (-lLLVM-19, or the static components and
# their system libraries), from its library directory.
set(_pc_llvm "-L${ARRAYC_LLVM_LIBDIR}")
foreach(lib ${ARRAYC_LLVM_LIBS})
  if(lib MATCHES "^-" OR IS_ABSOLUTE "${lib}")
    string(APPEND _pc_llvm " ${lib}")
  else()
    string(APPEND _pc_llvm " -l${lib}")
  endif()
endforeach()
# A static libarrayc (the default) needs its dependencies on every link
# line; a shared one records them itself.
get_target_property(_arrayc_type arrayc TYPE)
if(_arrayc_type STREQUAL "STATIC_LIBRARY")
  set(ARRAYC_PC_REQUIRES "Requires: libffi")
  set(ARRAYC_PC_LIBS "${_pc_llvm} -lm -lpthread -ldl")
  set(ARRAYC_PC_LIBS_PRIVATE "")
else()
  set(ARRAYC_PC_REQUIRES "Requires.private: libffi")
  set(ARRAYC_PC_LIBS "")
  set(ARRAYC_PC_LIBS_PRIVATE "${_pc_llvm} -lm -lpthread -ldl")
endif()
set(_pc_dir ${PROJECT_BINARY_DIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_pc_dest "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(_pc_dest "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
set(_pcs arrayc_rt arrayc)
# arrayc_dist.pc: libarrayc_dist, then arrayc.pc's libraries (Requires), and
# MPI as CMake found it (its include directories and libraries by path:
# MPI implementations name their own .pc files differently)
if(ARRAYC_CONFIG_DIST)
  list(APPEND _pcs arrayc_dist)
  set(ARRAYC_PC_MPI_CFLAGS "")
  foreach(d ${MPI_C_INCLUDE_DIRS})
    string(APPEND ARRAYC_PC_MPI_CFLAGS " -I${d}")
  endforeach()
  set(ARRAYC_PC_MPI_LIBS "")
  foreach(lib ${MPI_C_LIBRARIES})
    string(APPEND ARRAYC_PC_MPI_LIBS " ${lib}")
  endforeach()
endif()
set(_pc_files "")
foreach(pc ${_pcs})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${_pc_dir}/${pc}.pc.in @ONLY)
  string(APPEND _pc_files " \"${_pc_dir}/install/${pc}.pc\"")
endforeach()
install(CODE "
  set(ARRAYC_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  foreach(pc ${_pcs})
    configure_file(\"${_pc_dir}/\${pc}.pc.in\" \"${_pc_dir}/install/\${pc}.pc\" @ONLY)
  endforeach()
  file(INSTALL DESTINATION \"${_pc_dest}\" TYPE FILE FILES ${_pc_files})
")
