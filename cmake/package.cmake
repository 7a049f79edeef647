# `cpack -G DEB` in a build folder: one qgmm_<version>_<arch>.deb holding everything the
# install rules put under /usr. Configure with -DCMAKE_INSTALL_PREFIX=/usr so the library
# lands in Debian's multiarch folder. Dependencies come from dpkg-shlibdeps (dpkg-dev).
set(CPACK_PACKAGE_NAME qgmm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "low-precision casts and grouped GEMMs for mixture-of-experts training")
set(CPACK_PACKAGE_DESCRIPTION
    "One C library (FP8 rowwise, MXFP8 and FP8 blockwise casts, scale layouts, token padding, grouped GEMMs) with a CPU reference backend and CUDA, HIP and Vulkan plugins, plus the qgmm-bench runner and the qgmm-dash dashboard.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "qgmm maintainers")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_GENERATOR DEB)
include(CPack)
