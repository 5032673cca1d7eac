# Install layout (docs/install.md): one tree per MPI flavour side by side in one prefix, the way
# Debian lays out hdf5 for Open MPI and MPICH. Relative to the prefix:
#   lib/pario/<flavour>/libpario.so*            the library (SONAME libpario.so.0)
#   lib/pario/<flavour>/bin/pario-bench, ...    the benchmark programs
#   bin/pario-bench.<flavour>, ...              links to them (Debian's mpiexec.<flavour> style)
#   include/pario/<flavour>/pario.h
#   lib/pkgconfig/pario-<flavour>.pc
#   lib/cmake/pario/pario-<flavour>-*.cmake     the flavour's part of the CMake package
#   lib/cmake/pario/pario-config*.cmake         the package's entry point (same for every flavour)
#   share/doc/pario/                            README.md, LICENSE, docs/*.md (same for every flavour)
# ("lib" is GNUInstallDirs' CMAKE_INSTALL_LIBDIR, e.g. lib/x86_64-linux-gnu under /usr.)
include(GNUInstallDirs)
set(PARIO_INSTALL_LIBDIR "${CMAKE_INSTALL_LIBDIR}/pario/${PARIO_MPI}")
set(PARIO_INSTALL_BINDIR "${PARIO_INSTALL_LIBDIR}/bin")
set(PARIO_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/pario/${PARIO_MPI}")
set(PARIO_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/pario")
set(PARIO_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
set(PARIO_INSTALL_DOCDIR "${CMAKE_INSTALL_DATADIR}/doc/pario")
# Installed binaries keep the run path of libraries CMake linked from outside the system
# directories (an MPI of one's own); the system's are never added.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)

# pario_install_program_links(PROGRAM...): <prefix>/bin/PROGRAM.<flavour>, a relative symbolic
# link to the program installed in the flavour's bin directory.
function(pario_install_program_links)
  foreach(p IN LISTS ARGN)
    file(RELATIVE_PATH target "/p/${CMAKE_INSTALL_BINDIR}" "/p/${PARIO_INSTALL_BINDIR}/${p}")
    set(link "${p}.${PARIO_MPI}")
    install(CODE "
      set(_pario_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
      file(MAKE_DIRECTORY \"\${_pario_dir}\")
      message(STATUS \"Installing: \${_pario_dir}/${link} -> ${target}\")
      file(CREATE_LINK \"${target}\" \"\${_pario_dir}/${link}\" SYMBOLIC)
      list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_pario_dir}/${link}\")")
  endforeach()
endfunction()

# pario_install_shared(DESTINATION GLOB...): files every flavour's tree installs alike, at one
# place in the prefix. A file already there with the same content is left alone, so installing
# a second flavour rewrites nothing of the first (see cmake/ParioInstallShared.cmake). The globs
# are expanded at install time.
function(pario_install_shared dest)
  install(CODE "
    set(PARIO_SHARED_DEST \"${dest}\")
    set(PARIO_SHARED_FILES \"${ARGN}\")
    include(\"${PROJECT_SOURCE_DIR}/cmake/ParioInstallShared.cmake\")")
endfunction()
