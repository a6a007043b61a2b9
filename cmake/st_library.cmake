# st_library(NAME <name> SOURCES ... [DEPS ...] [PUBLIC_DEPS ...])
#
# One way to declare a library: static, warnings on, the repository root on
# the include path (headers are included as "engine/edm.h"), and an alias
# sidetable::<name> that other parts link against.
set(ST_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)

function(st_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(st_${ARG_NAME} STATIC ${ARG_SOURCES})
  add_library(sidetable::${ARG_NAME} ALIAS st_${ARG_NAME})
  target_include_directories(st_${ARG_NAME} PUBLIC ${CMAKE_SOURCE_DIR})
  target_compile_options(st_${ARG_NAME} PRIVATE ${ST_WARNINGS})
  target_link_libraries(st_${ARG_NAME} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
endfunction()

# st_executable(NAME <name> SOURCES ... [DEPS ...])
function(st_executable)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${ST_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
endfunction()

# st_pid_cache(<executable>): the executable answers getpid() from memory
# (common/pid_cache.cc says why: libzmq asks on every wait). Only for our
# own programs; a library never replaces a libc function for its users.
# The export makes the shared libraries (libzmq) bind to this definition
# whether or not anything else in the link refers to it.
function(st_pid_cache TARGET)
  target_sources(${TARGET} PRIVATE ${PROJECT_SOURCE_DIR}/common/pid_cache.cc)
  target_link_options(${TARGET} PRIVATE -Wl,--export-dynamic-symbol=getpid)
endfunction()
