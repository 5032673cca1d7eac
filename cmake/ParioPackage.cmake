# Included at the end of the top-level CMakeLists.txt: the installed CMake package, the
# pkg-config file and the docs (layout: cmake/ParioInstall.cmake, use: docs/install.md).
include(CMakePackageConfigHelpers)
set(_pario_pkg ${CMAKE_BINARY_DIR}/package)

# The library's include directories name the source tree: keep them for the build tree only,
# and give the installed pario::pario the flavour's include directory. (Here, after every
# subdirectory, so directories added to pario anywhere are covered.)
get_target_property(_pario_inc pario INTERFACE_INCLUDE_DIRECTORIES)
if(_pario_inc)
  list(TRANSFORM _pario_inc REPLACE "^(.+)$" "$<BUILD_INTERFACE:\\1>")
  set_target_properties(pario PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_pario_inc}")
endif()
set_property(TARGET pario APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
             "$<INSTALL_INTERFACE:${PARIO_INSTALL_INCLUDEDIR}>")

# The flavour's own files: imported target pario::pario (relocatable: install(EXPORT) computes
# the prefix from the file's own location) and the facts of this build.
install(EXPORT pario-targets NAMESPACE pario:: FILE pario-${PARIO_MPI}-targets.cmake
        DESTINATION ${PARIO_INSTALL_CMAKEDIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/pario-flavour-info.cmake.in
               ${_pario_pkg}/pario-${PARIO_MPI}-info.cmake @ONLY)
install(FILES ${_pario_pkg}/pario-${PARIO_MPI}-info.cmake DESTINATION ${PARIO_INSTALL_CMAKEDIR})

# The entry point and version file are the same for every flavour.
configure_file(${PROJECT_SOURCE_DIR}/cmake/pario-config.cmake.in
               ${_pario_pkg}/shared/pario-config.cmake @ONLY)
write_basic_package_version_file(${_pario_pkg}/shared/pario-config-version.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
pario_install_shared(${PARIO_INSTALL_CMAKEDIR} ${_pario_pkg}/shared/pario-config.cmake
                     ${_pario_pkg}/shared/pario-config-version.cmake)

# pkg-config: pario-<flavour>.pc, with the prefix found from the .pc file's own place.
file(RELATIVE_PATH PARIO_PC_TO_PREFIX "/p/${PARIO_INSTALL_PKGCONFIGDIR}" "/p")
string(REGEX REPLACE "/$" "" PARIO_PC_TO_PREFIX "${PARIO_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/pario.pc.in ${_pario_pkg}/pario-${PARIO_MPI}.pc @ONLY)
install(FILES ${_pario_pkg}/pario-${PARIO_MPI}.pc DESTINATION ${PARIO_INSTALL_PKGCONFIGDIR})

# Docs (docs/*.md as present at install time).
pario_install_shared(${PARIO_INSTALL_DOCDIR} ${PROJECT_SOURCE_DIR}/README.md
                     ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/docs/*.md)
