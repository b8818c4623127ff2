# Installation and the Debian packages (`cpack -G DEB` in the build folder; docs/release.md):
#   poslens-cli  the CLI, its man page, the demo models under /usr/share/poslens/demos
#   poslens      the GUI, its man page, the .desktop entry and icon; depends on poslens-cli
# Depends lines come from dpkg-shlibdeps over the installed binaries, i.e. from the Debian
# packages whose libraries they link (LibTorch, Qt 6, HDF5, ICU, PCRE2, OpenSSL, OpenBLAS …).
include(GNUInstallDirs)

install(TARGETS poslens-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/demos/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/poslens/demos COMPONENT cli)

# Debian policy: man pages gzipped with -n (no timestamp, so the package is reproducible).
function(poslens_man_page name component)
  set(gz ${CMAKE_CURRENT_BINARY_DIR}/man/${name}.1.gz)
  add_custom_command(OUTPUT ${gz}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/man
    COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/resources/man/${name}.1 > ${gz}
    DEPENDS ${PROJECT_SOURCE_DIR}/resources/man/${name}.1 VERBATIM)
  add_custom_target(man_${name} ALL DEPENDS ${gz})
  install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
endfunction()
poslens_man_page(poslens-cli cli)

if(POSLENS_BUILD_GUI)
  install(TARGETS poslens RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gui)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/poslens.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT gui)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/poslens.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps COMPONENT gui)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/poslens-256.png
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/256x256/apps RENAME poslens.png
          COMPONENT gui)
  poslens_man_page(poslens gui)
endif()

set(CPACK_PACKAGE_NAME poslens)
set(CPACK_PACKAGE_VENDOR "PosLens")
set(CPACK_PACKAGE_CONTACT "PosLens developers <poslens@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "see how transformers use position")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the build keeps debug info; the packages do not
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli)
if(POSLENS_BUILD_GUI)
  list(APPEND CPACK_COMPONENTS_ALL gui)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME poslens-cli)
set(CPACK_DEBIAN_CLI_DESCRIPTION "PosLens command line: attention, position-only maps, CoPE, RoPE
 frequency analyses, HDF5 export, training and sweeps. poslens-cli runs checkpoints of the
 common formats (safetensors, torch.save, llama2.c, HF and PosLens folders) and writes each
 analysis as HDF5 or CSV and a figure. Demo models are in /usr/share/poslens/demos.")
set(CPACK_DEBIAN_GUI_PACKAGE_NAME poslens)
set(CPACK_DEBIAN_GUI_DESCRIPTION "PosLens desktop tool: see how transformers use position
 Open a checkpoint, type text, and inspect every attention head: attention patterns,
 position-only maps, CoPE gates, RoPE per-frequency components and their VAF curves, the
 U-shape probe; compare checkpoints; export figures and HDF5.")
set(CPACK_DEBIAN_GUI_PACKAGE_DEPENDS "poslens-cli (= ${PROJECT_VERSION})")
# Python and the Slurm client are optional: sweeps through Slurm and the h5py reader examples.
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS "slurm-client, python3-h5py")
# LibTorch runs on any BLAS; the reference one is ~40x slower than OpenBLAS, whose OpenMP
# build suits LibTorch's OpenMP threads (scripts/setup.sh, docs/performance.md).
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "libopenblas0-openmp")
include(CPack)
