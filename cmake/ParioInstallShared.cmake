# Install-time part of pario_install_shared() (cmake/ParioInstall.cmake): installs the files
# matching PARIO_SHARED_FILES (globs) into <prefix>/PARIO_SHARED_DEST. These are the files that
# are the same for every MPI flavour (the CMake package's entry point and version file, the
# docs); one already installed by another flavour's tree with the same content is kept as it
# is ("Up-to-date"), and one that differs (another pario version) is replaced with a warning.
file(GLOB _pario_files LIST_DIRECTORIES false ${PARIO_SHARED_FILES})
foreach(_pario_f IN LISTS _pario_files)
  get_filename_component(_pario_n "${_pario_f}" NAME)
  set(_pario_dst "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${PARIO_SHARED_DEST}/${_pario_n}")
  set(_pario_same FALSE)
  if(EXISTS "${_pario_dst}")
    file(SHA256 "${_pario_f}" _pario_a)
    file(SHA256 "${_pario_dst}" _pario_b)
    if(_pario_a STREQUAL _pario_b)
      set(_pario_same TRUE)
    else()
      message(WARNING "pario: replacing ${_pario_dst}, which differs from this build's "
                      "(another version of pario installed in this prefix?)")
    endif()
  endif()
  if(_pario_same)
    message(STATUS "Up-to-date: ${_pario_dst}")
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_pario_dst}")
  else()
    file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${PARIO_SHARED_DEST}" TYPE FILE
         FILES "${_pario_f}")
  endif()
endforeach()
