# Runs at install time (install(SCRIPT) from CMakeLists.txt): writes the unit files and the
# config file for the prefix actually installed to, which `cmake --install --prefix` and cpack
# may choose after configuration. Set by CMakeLists.txt before this runs: JITSYM_SOURCE_DIR,
# JITSYM_BINARY_DIR,
# JITSYM_SBINDIR, JITSYM_DOCDIR, JITSYM_UNITDIR (relative to the prefix, or absolute).
set(_prefix "${CMAKE_INSTALL_PREFIX}")
# The GNUInstallDirs rule for sysconfdir: /etc for the /usr prefix, /etc/opt/... for /opt/...
if(_prefix STREQUAL "/usr" OR _prefix STREQUAL "/")
  set(_sysconfdir "/etc")
elseif(_prefix MATCHES "^/opt/")
  set(_sysconfdir "/etc${_prefix}")
else()
  set(_sysconfdir "${_prefix}/etc")
endif()
function(_jitsym_full out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${_prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
_jitsym_full(_sbindir "${JITSYM_SBINDIR}")
_jitsym_full(_docdir "${JITSYM_DOCDIR}")
_jitsym_full(_unitdir "${JITSYM_UNITDIR}")

# Names the unit file template uses.
set(CMAKE_INSTALL_FULL_SBINDIR "${_sbindir}")
set(CMAKE_INSTALL_FULL_DOCDIR "${_docdir}")
set(JITSYM_CONFIG_FILE "${_sysconfdir}/jitsymd/jitsymd.conf")
set(_staging "${JITSYM_BINARY_DIR}/systemd")
configure_file("${JITSYM_SOURCE_DIR}/systemd/jitsymd.service.in" "${_staging}/jitsymd.service"
               @ONLY)
file(INSTALL "${_staging}/jitsymd.service" "${JITSYM_SOURCE_DIR}/systemd/jitsymd.socket"
     DESTINATION "${_unitdir}" FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ
     WORLD_READ)
file(INSTALL "${JITSYM_SOURCE_DIR}/systemd/jitsymd.conf"
     DESTINATION "${_sysconfdir}/jitsymd" FILE_PERMISSIONS OWNER_READ OWNER_WRITE
     GROUP_READ WORLD_READ)
