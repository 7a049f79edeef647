# The small library of ci/ that qgmm-dash links too; included by ci/ and, when qgmm-bench
# is not built, by dashboard/.
#   qgmm_rundoc   the run-document validator (one decision for qgmm-bench import/upload
#                 and qgmm-dash's ingest), the JSON reader and the run record it fills
if(NOT TARGET qgmm_rundoc)
  set(_ci_dir ${CMAKE_CURRENT_LIST_DIR})
  add_library(qgmm_rundoc STATIC
    ${_ci_dir}/rundoc.c ${_ci_dir}/json.c ${_ci_dir}/runrec.c ${_ci_dir}/stats.c)
  target_include_directories(qgmm_rundoc PUBLIC ${_ci_dir})
  target_link_libraries(qgmm_rundoc PUBLIC m)
endif()
