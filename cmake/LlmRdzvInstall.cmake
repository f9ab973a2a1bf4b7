# Install rules for the two packages a site installs (packaging/ builds them from these rules):
#   component "rdzv"    → llm-rdzv:         SPANK plugin, rdzvd, rdzvctl, configs, systemd unit,
#                                           site-secret tool, man pages (no LibTorch)
#   component "trainer" → llm-rdzv-trainer: the trainer binary, its LibTorch wrapper, configs, man page
# Each rule is guarded by if(TARGET ...) / if(EXISTS ...) so any subset of the build installs.
# Paths come from GNUInstallDirs; the *_FULL_* forms keep /etc at /etc when the prefix is /usr.

set(LLMRDZV_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

# Slurm loads plugins from its PluginDir: /usr/lib/<multiarch>/slurm-wlm on Debian, <libdir>/slurm
# on RHEL-family systems. plugstack.conf names the plugin by absolute path, so this only has to
# agree with the snippet installed below.
if(EXISTS /usr/${CMAKE_INSTALL_LIBDIR}/slurm-wlm)
  set(_slurm_plugin_dir_default ${CMAKE_INSTALL_FULL_LIBDIR}/slurm-wlm)
else()
  set(_slurm_plugin_dir_default ${CMAKE_INSTALL_FULL_LIBDIR}/slurm)
endif()
set(LLMRDZV_SLURM_PLUGIN_DIR ${_slurm_plugin_dir_default} CACHE PATH "Where llm_rdzv.so is installed (Slurm's PluginDir)")
set(LLMRDZV_SLURM_SYSCONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/slurm CACHE PATH "Slurm's configuration directory")

# systemd's own pkg-config file knows the distribution's unit and sysusers directories
# (/lib/systemd/system on Debian 12, /usr/lib/systemd/system on RHEL 9).
pkg_get_variable(_systemd_unit_dir systemd systemdsystemunitdir)
pkg_get_variable(_sysusers_dir systemd sysusersdir)
if(NOT _systemd_unit_dir)
  set(_systemd_unit_dir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
if(NOT _sysusers_dir)
  set(_sysusers_dir ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d)
endif()
set(LLMRDZV_SYSTEMD_UNIT_DIR ${_systemd_unit_dir} CACHE PATH "systemd system unit directory")
set(LLMRDZV_SYSUSERS_DIR ${_sysusers_dir} CACHE PATH "systemd sysusers.d directory")

set(LLMRDZV_CONF_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/llm-rdzv)
set(LLMRDZV_SITE_SECRET ${LLMRDZV_CONF_DIR}/site.secret)
set(LLMRDZV_SITE_USER llm-rdzv)

# ---- llm-rdzv: plugin + daemon ----------------------------------------------------------------
if(TARGET rdzvd)
  install(TARGETS rdzvd RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT rdzv)
endif()
if(TARGET rdzvctl)
  install(TARGETS rdzvctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT rdzv)
endif()
if(TARGET llm_rdzv)
  install(TARGETS llm_rdzv LIBRARY DESTINATION ${LLMRDZV_SLURM_PLUGIN_DIR} COMPONENT rdzv)
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/etc/rdzvd.yaml)
  install(FILES ${PROJECT_SOURCE_DIR}/etc/rdzvd.yaml DESTINATION ${LLMRDZV_CONF_DIR} COMPONENT rdzv)
endif()
# The snippet (etc/plugstack.conf.d, documented there) names the plugin by absolute path: the
# installed copy names the path this install puts it at.
set(_plugstack ${PROJECT_SOURCE_DIR}/etc/plugstack.conf.d/llm-rdzv.conf)
if(EXISTS ${_plugstack})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_plugstack})
  file(READ ${_plugstack} _snippet)
  string(REGEX REPLACE "[^ \n]*/llm_rdzv\\.so" "${LLMRDZV_SLURM_PLUGIN_DIR}/llm_rdzv.so" _snippet "${_snippet}")
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/llm-rdzv.conf "${_snippet}")
  install(FILES ${CMAKE_BINARY_DIR}/packaging/llm-rdzv.conf
          DESTINATION ${LLMRDZV_SLURM_SYSCONFDIR}/plugstack.conf.d COMPONENT rdzv)
endif()

configure_file(${LLMRDZV_PACKAGING_DIR}/systemd/rdzvd.service.in ${CMAKE_BINARY_DIR}/packaging/rdzvd.service @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/packaging/rdzvd.service DESTINATION ${LLMRDZV_SYSTEMD_UNIT_DIR} COMPONENT rdzv)
install(FILES ${LLMRDZV_PACKAGING_DIR}/systemd/llm-rdzv.sysusers DESTINATION ${LLMRDZV_SYSUSERS_DIR}
        RENAME llm-rdzv.conf COMPONENT rdzv)

configure_file(${LLMRDZV_PACKAGING_DIR}/scripts/llm-rdzv-secret.in ${CMAKE_BINARY_DIR}/packaging/llm-rdzv-secret @ONLY)
install(PROGRAMS ${CMAKE_BINARY_DIR}/packaging/llm-rdzv-secret DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT rdzv)

# Man pages name installed paths through @VARIABLES@ (packaging/man/*.in).
function(llmrdzv_install_man page component)
  string(REGEX MATCH "[0-9]$" _section ${page})
  configure_file(${LLMRDZV_PACKAGING_DIR}/man/${page}.in ${CMAKE_BINARY_DIR}/packaging/man/${page} @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/man/${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section}
          COMPONENT ${component})
endfunction()
foreach(_page llm-rdzv.8 rdzvd.8 llm-rdzv-secret.8 rdzvctl.1)
  llmrdzv_install_man(${_page} rdzv)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/docs/admin-guide.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/llm-rdzv
        COMPONENT rdzv)

# ---- llm-rdzv-trainer ---------------------------------------------------------------------------
# The trainer links LibTorch from the pinned PyPI wheel (several GB of CUDA libraries), which no
# package bundles: the real binary lives in libexec without a build-machine RUNPATH, and
# bin/trainer is a wrapper that finds the site's torch wheel of the same version (see trainer(1)).
if(TARGET trainer)
  set(LLMRDZV_TRAINER_LIBEXEC_DIR ${CMAKE_INSTALL_FULL_LIBEXECDIR}/llm-rdzv)
  set(LLMRDZV_TRAINER_LIBEXEC ${LLMRDZV_TRAINER_LIBEXEC_DIR}/trainer)
  set(LLMRDZV_TRAINER_CONF ${LLMRDZV_CONF_DIR}/trainer.conf)
  file(RELATIVE_PATH LLMRDZV_TRAINER_FROM_BINDIR ${CMAKE_INSTALL_FULL_BINDIR} ${LLMRDZV_TRAINER_LIBEXEC})
  install(TARGETS trainer RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/llm-rdzv COMPONENT trainer)
  # The link's -rpath to the build venv's nvidia/*/lib would survive CMake's own RPATH rewrite.
  install(CODE "file(RPATH_SET FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBEXECDIR}/llm-rdzv/trainer\" NEW_RPATH \"\")"
          COMPONENT trainer)
  # --dataset_name's Arrow reader: beside the binary, without the build venv's rpath either; the
  # wrapper puts the site environment's pyarrow libraries on the search path.
  if(TARGET llmrdzv_arrow_reader)
    install(TARGETS llmrdzv_arrow_reader LIBRARY DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/llm-rdzv COMPONENT trainer)
    install(CODE "file(RPATH_SET FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBEXECDIR}/llm-rdzv/llmrdzv_arrow_reader.so\" NEW_RPATH \"\")"
            COMPONENT trainer)
  endif()
  configure_file(${LLMRDZV_PACKAGING_DIR}/scripts/trainer-wrapper.in ${CMAKE_BINARY_DIR}/packaging/trainer @ONLY)
  install(PROGRAMS ${CMAKE_BINARY_DIR}/packaging/trainer DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT trainer)
  configure_file(${LLMRDZV_PACKAGING_DIR}/scripts/trainer.conf.in ${CMAKE_BINARY_DIR}/packaging/trainer.conf @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/packaging/trainer.conf DESTINATION ${LLMRDZV_CONF_DIR} COMPONENT trainer)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/etc/trainer/ DESTINATION ${CMAKE_INSTALL_DATADIR}/llm-rdzv/trainer
          COMPONENT trainer FILES_MATCHING PATTERN "*.yaml")
  llmrdzv_install_man(trainer.1 trainer)
endif()
