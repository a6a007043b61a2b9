# Run by `cmake --install` (and by CPack) after the programs are installed:
# writes the systemd units and the /etc configuration for this install's
# prefix. ST_SOURCE_DIR is set by packaging/CMakeLists.txt.
#
# /etc/sidetable when the prefix is /usr (the .deb, a distribution layout);
# <prefix>/etc/sidetable otherwise, so `cmake --install --prefix ~/opt`
# never writes outside its prefix.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(confdir "/etc/sidetable")
else()
  set(confdir "${prefix}/etc/sidetable")
endif()
set(bindir "${prefix}/bin")
set(unitdir "${prefix}/lib/systemd/system")
set(docdir "${prefix}/share/doc/sidetable")

# The production examples are the installed defaults; an existing file is
# the operator's and is kept (the .deb marks them as conffiles as well).
foreach(pair "sidetable.prod.yaml:sidetable.yaml" "worker.prod.yaml:worker.yaml")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 from)
  list(GET pair 1 to)
  set(dest "$ENV{DESTDIR}${confdir}/${to}")
  if(EXISTS "${dest}")
    message(STATUS "Keeping: ${dest}")
  else()
    message(STATUS "Installing: ${dest}")
    file(MAKE_DIRECTORY "$ENV{DESTDIR}${confdir}")
    file(COPY_FILE "${ST_SOURCE_DIR}/configs/${from}" "${dest}")
  endif()
endforeach()

foreach(unit sidetable.service sidetable-worker.service)
  message(STATUS "Installing: $ENV{DESTDIR}${unitdir}/${unit}")
  configure_file("${ST_SOURCE_DIR}/packaging/systemd/${unit}.in" "$ENV{DESTDIR}${unitdir}/${unit}" @ONLY)
endforeach()
