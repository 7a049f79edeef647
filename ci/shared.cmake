# qgmm_store: the one library of ci/ that qgmm-bench and qgmm-dash both link. Included by
# ci/ and, when qgmm-bench is not built, by dashboard/.
#   the store       ci/schema.sql (embedded) and its migrations, opening read-only or for
#                   writing, writing and reading runs, the series fingerprint and the
#                   run-content digest (store*.c, sha256.c)
#   the run format  the JSON reader and writer, the run-document validator (one decision
#                   for qgmm-bench import/upload and qgmm-dash's ingest), the run record
#                   and the statistics it derives (json.c, rundoc.c, runrec.c, stats.c)
if(NOT TARGET qgmm_store)
  set(_ci_dir ${CMAKE_CURRENT_LIST_DIR})
  # The schema is both documentation and the migration list the binaries apply, so it is
  # embedded rather than copied.
  set(_schema_c ${CMAKE_BINARY_DIR}/ci/schema_sql.c)
  add_custom_command(OUTPUT ${_schema_c}
    COMMAND ${CMAKE_COMMAND} -DIN=${_ci_dir}/schema.sql -DOUT=${_schema_c}
            -DNAME=qgmm_schema_sql -P ${_ci_dir}/cmake/embed_sql.cmake
    DEPENDS ${_ci_dir}/schema.sql ${_ci_dir}/cmake/embed_sql.cmake
    COMMENT "Embedding ci/schema.sql")
  find_package(Threads REQUIRED)
  add_library(qgmm_store STATIC
    ${_ci_dir}/store.c ${_ci_dir}/store_ro.c ${_ci_dir}/store_live.c ${_ci_dir}/store_json.c
    ${_ci_dir}/store_digest.c ${_ci_dir}/sha256.c ${_ci_dir}/rundoc.c ${_ci_dir}/json.c
    ${_ci_dir}/runrec.c ${_ci_dir}/stats.c ${_schema_c})
  target_include_directories(qgmm_store PUBLIC ${_ci_dir})
  target_link_libraries(qgmm_store PUBLIC SQLite::SQLite3 Threads::Threads m)
endif()
