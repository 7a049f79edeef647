#!/bin/sh
# build.sh BUILD_DIR [OUT_BIN_DIR] — compiles bench/moe/moe_bench.c with gcc against
# BUILD_DIR/lib/libqgmm.so (headers from api/) into OUT_BIN_DIR (default BUILD_DIR/bin).
# Run from the repository root. --help: this text.
set -e
case "$1" in -h|--help|"") sed -n 2,4p "$0"; [ -n "$1" ]; exit $?;; esac
B=$1
OUT=${2:-$B/bin}
mkdir -p "$OUT"
${CC:-gcc} -std=c11 -O2 -Wall -Wextra -Iapi bench/moe/moe_bench.c -L"$B/lib" -lqgmm \
  -Wl,-rpath,'$ORIGIN/../lib' -o "$OUT/moe_bench"
echo "built $OUT/moe_bench"
