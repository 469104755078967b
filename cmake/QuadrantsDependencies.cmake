# Finds Quadrants' dependencies (Debian packages) and names them qd_deps::*.
# Shared by the build and by the installed package config; a missing one names its package.
#
# Not find_dependency(): outside a package config its return() leaves this file
# silently and the build fails later on a missing target, and inside one it
# reports the dependency's own config-file search rather than what to install.
# Here our own build stops with the Debian package's name, and the installed
# config returns to find_package(quadrants) with that name in
# quadrants_NOT_FOUND_MESSAGE.

macro(qd_dependency_missing what debian_package)
  set(qd_dependency_message "Quadrants needs ${what}: install the Debian package ${debian_package} \
(apt-get install ${debian_package}; in the source tree, scripts/install-deps installs them all)")
  if(CMAKE_FIND_PACKAGE_NAME)
    set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE "${qd_dependency_message}")
    set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
    return()  # a macro: returns from this file, then quadrants-config.cmake stops too
  endif()
  message(FATAL_ERROR "${qd_dependency_message}")
endmacro()

macro(qd_find_package package debian_package)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    qd_dependency_missing("${package} ${ARGN}" ${debian_package})
  endif()
endmacro()

macro(qd_find_pkg_config module target debian_package)
  if(NOT TARGET ${target})
    pkg_check_modules(QD_${module} QUIET IMPORTED_TARGET GLOBAL lib${module})
    if(NOT QD_${module}_FOUND)
      qd_dependency_missing("lib${module} (looked up with pkg-config)" ${debian_package})
    endif()
    add_library(${target} ALIAS PkgConfig::QD_${module})
  endif()
endmacro()

qd_find_package(Threads libc6-dev)
qd_find_package(fmt libfmt-dev)
qd_find_package(Boost libboost-dev 1.71)
qd_find_package(PkgConfig pkg-config)
qd_find_pkg_config(zstd qd_deps::zstd libzstd-dev)
qd_find_pkg_config(xxhash qd_deps::xxhash libxxhash-dev)

# The remote cache tier (docs/cache.md "The remote tier"): hiredis and libsodium, linked
# when both are found. QD_WITH_REMOTE_CACHE: AUTO (default), ON (required) or OFF; the
# installed package config sets it to what the library was built with.
if(NOT DEFINED QD_WITH_REMOTE_CACHE)
  set(QD_WITH_REMOTE_CACHE AUTO)
endif()
if(QD_WITH_REMOTE_CACHE AND NOT TARGET qd_deps::hiredis)
  pkg_check_modules(QD_HIREDIS QUIET IMPORTED_TARGET GLOBAL hiredis)
  pkg_check_modules(QD_SODIUM QUIET IMPORTED_TARGET GLOBAL libsodium)
  if(QD_HIREDIS_FOUND AND QD_SODIUM_FOUND)
    add_library(qd_deps::hiredis ALIAS PkgConfig::QD_HIREDIS)
    add_library(qd_deps::sodium ALIAS PkgConfig::QD_SODIUM)
  elseif(NOT QD_WITH_REMOTE_CACHE STREQUAL "AUTO")
    if(NOT QD_HIREDIS_FOUND)
      qd_dependency_missing("hiredis for the remote cache tier (QD_WITH_REMOTE_CACHE=${QD_WITH_REMOTE_CACHE})"
                            libhiredis-dev)
    endif()
    qd_dependency_missing("libsodium for the remote cache tier (QD_WITH_REMOTE_CACHE=${QD_WITH_REMOTE_CACHE})"
                          libsodium-dev)
  endif()
endif()
