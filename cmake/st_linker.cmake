# The linker: gold when the toolchain has it (binutils ships it, so every
# Debian machine that has g++ does). The build links about 200 executables;
# gold links them in about 0.6 of the time of the default bfd linker
# (docs/development.md, "Build choices that pay"). -DSIDETABLE_LINKER=default keeps the
# compiler's own choice; any other value is passed as -fuse-ld=<value>.
include(CheckLinkerFlag)
set(SIDETABLE_LINKER "gold" CACHE STRING "Linker for -fuse-ld= (gold, lld, bfd, or default)")
if(NOT SIDETABLE_LINKER STREQUAL "default")
  check_linker_flag(CXX "-fuse-ld=${SIDETABLE_LINKER}" ST_LINKER_WORKS_${SIDETABLE_LINKER})
  if(ST_LINKER_WORKS_${SIDETABLE_LINKER})
    add_link_options("-fuse-ld=${SIDETABLE_LINKER}")
  else()
    message(STATUS "sidetable: linker '${SIDETABLE_LINKER}' not usable here; using the compiler's default")
  endif()
endif()
