# Install rules (cmake --install BUILD --prefix P) and what lets other builds find the
# installed qgmm: qgmmConfig.cmake (find_package(qgmm) -> qgmm::qgmm) and qgmm.pc.
#   include/qgmm/qgmm.h                    the public header (internal headers stay out)
#   <libdir>/libqgmm.so.MAJOR.MINOR.PATCH  SONAME libqgmm.so.MAJOR, + the usual links
#   <libdir>/qgmm/libqgmm-<backend>.so     GPU plugins, found by libqgmm from its own path
#   <libdir>/cmake/qgmm/, <libdir>/pkgconfig/qgmm.pc
#   bin/qgmm-bench, bin/qgmm-dash          when built
#   share/doc/qgmm/                        README and docs/
#   share/qgmm/                            the store's schema.sql and the suites
# Never installed: tests, test plugins (libqgmm-testplugin, libqgmm-hipemu), benchmarks,
# probes, build tools. Installed files carry no build-tree RUNPATH.
include(CMakePackageConfigHelpers)

set(QGMM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/qgmm)
set(QGMM_INSTALL_PLUGINDIR ${CMAKE_INSTALL_LIBDIR}/${QGMM_PLUGIN_SUBDIR})

install(TARGETS qgmm EXPORT qgmmTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${CMAKE_INSTALL_INCLUDEDIR}/qgmm)
install(FILES ${PROJECT_SOURCE_DIR}/api/qgmm.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qgmm
        COMPONENT dev)

# Plugins: libqgmm is one folder up (it is normally loaded already when they are opened).
foreach(plugin qgmm-cuda qgmm-hip qgmm-vulkan)
  if(TARGET ${plugin})
    set_target_properties(${plugin} PROPERTIES INSTALL_RPATH "$ORIGIN/..")
    install(TARGETS ${plugin} LIBRARY DESTINATION ${QGMM_INSTALL_PLUGINDIR} COMPONENT runtime)
  endif()
endforeach()
if(TARGET qgmm-hip)
  # libamdhip64 from a ROCm folder outside the loader's default path stays findable.
  set_target_properties(qgmm-hip PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
endif()

# qgmm-bench links libqgmm: $ORIGIN/../<libdir> unless <libdir> is a system folder.
if(TARGET qgmm-bench)
  list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES ${CMAKE_INSTALL_FULL_LIBDIR} _qgmm_sys_libdir)
  if(_qgmm_sys_libdir EQUAL -1)
    file(RELATIVE_PATH _qgmm_bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
    set_target_properties(qgmm-bench PROPERTIES INSTALL_RPATH "$ORIGIN/${_qgmm_bin_to_lib}")
  endif()
  install(TARGETS qgmm-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()
if(TARGET qgmm-dash)
  install(TARGETS qgmm-dash RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc
        FILES_MATCHING PATTERN "*.md")
install(FILES ${PROJECT_SOURCE_DIR}/ci/schema.sql DESTINATION ${CMAKE_INSTALL_DATADIR}/qgmm
        COMPONENT tools)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/suites/ DESTINATION ${CMAKE_INSTALL_DATADIR}/qgmm/suites
        COMPONENT tools FILES_MATCHING PATTERN "*.suite")

# find_package(qgmm): targets, config and version (same MAJOR = same SONAME = compatible).
install(EXPORT qgmmTargets NAMESPACE qgmm:: DESTINATION ${QGMM_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/qgmmConfig.cmake.in
  ${PROJECT_BINARY_DIR}/qgmmConfig.cmake INSTALL_DESTINATION ${QGMM_INSTALL_CMAKEDIR}
  PATH_VARS QGMM_INSTALL_PLUGINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qgmmConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qgmmConfig.cmake ${PROJECT_BINARY_DIR}/qgmmConfigVersion.cmake
        DESTINATION ${QGMM_INSTALL_CMAKEDIR} COMPONENT dev)

# qgmm.pc names the prefix the files are installed under, which `cmake --install --prefix`
# chooses only then: it is written at install time.
install(CODE "
  set(QGMM_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/qgmm.pc.in\" \"${PROJECT_BINARY_DIR}/qgmm.pc\" @ONLY)"
  COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/qgmm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
