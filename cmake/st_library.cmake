# st_library(NAME <name> SOURCES ... [DEPS ...] [PUBLIC_DEPS ...])
#
# One way to declare a library: static, warnings on, the repository root on
# the include path (headers are included as "engine/edm.h"), and an alias
# sidetable::<name> that other parts link against.
set(ST_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)

# Unity builds for the libraries, programs and test binaries: CMake
# compiles their sources eight to a translation unit, so the headers they
# share (RocksDB, libzmq, spdlog, the standard library: ~100k lines a source) are
# parsed once per eight files instead of once per file. Much of a source's
# compile time was that parsing (docs/development.md, "Build choices that
# pay"). Names in anonymous namespaces must therefore differ between the
# files of one target. -DSIDETABLE_UNITY_BUILD=OFF compiles file by file
# (quicker rebuilds while editing one file; it also shows an include a file
# forgot but its batch provided).
option(SIDETABLE_UNITY_BUILD "Compile each library, program and test binary eight sources at a time" ON)

function(st_unity TARGET)
  if(NOT SIDETABLE_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${TARGET} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  # A source with a file-scope using-directive or macro would change the
  # meaning of the sources after it in its batch: it compiles alone.
  get_target_property(sources ${TARGET} SOURCES)
  get_target_property(dir ${TARGET} SOURCE_DIR)
  foreach(src IN LISTS sources)
    if(NOT src MATCHES "\\.cc$")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY ${dir} OUTPUT_VARIABLE path)
    file(STRINGS ${path} leaks REGEX "^(using namespace|#[ \t]*define)")
    if(leaks)
      set_source_files_properties(${src} TARGET_DIRECTORY ${TARGET} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
  # Classes defined in a source now sit in an included file, where GCC
  # warns about their members of anonymous-namespace types; they are still
  # local to the one translation unit.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${TARGET} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

function(st_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(st_${ARG_NAME} STATIC ${ARG_SOURCES})
  add_library(sidetable::${ARG_NAME} ALIAS st_${ARG_NAME})
  target_include_directories(st_${ARG_NAME} PUBLIC ${CMAKE_SOURCE_DIR})
  target_compile_options(st_${ARG_NAME} PRIVATE ${ST_WARNINGS})
  target_link_libraries(st_${ARG_NAME} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
  st_unity(st_${ARG_NAME})
endfunction()

# st_executable(NAME <name> SOURCES ... [DEPS ...])
function(st_executable)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${ST_WARNINGS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  st_unity(${ARG_NAME})
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
