# The two small libraries of ci/ that qgmm-dash links too; included by ci/ and, when
# qgmm-bench is not built, by dashboard/.
#   qgmm_rundoc   the run-document validator (one decision for qgmm-bench import/upload
#                 and qgmm-dash's ingest), the JSON reader and the run record it fills
#   qgmm_store_ro opening a store read-only and telling a qgmm store from other files
if(NOT TARGET qgmm_rundoc)
  set(_ci_dir ${CMAKE_CURRENT_LIST_DIR})
  add_library(qgmm_rundoc STATIC
    ${_ci_dir}/rundoc.c ${_ci_dir}/json.c ${_ci_dir}/runrec.c ${_ci_dir}/stats.c)
  target_include_directories(qgmm_rundoc PUBLIC ${_ci_dir})
  target_link_libraries(qgmm_rundoc PUBLIC m)
  add_library(qgmm_store_ro STATIC ${_ci_dir}/store_ro.c)
  target_include_directories(qgmm_store_ro PUBLIC ${_ci_dir})
  target_link_libraries(qgmm_store_ro PUBLIC SQLite::SQLite3)
endif()
