#!/usr/bin/env bash
# tests/consumer/run.sh BUILD_DIR — qgmm as a dependency, the way its users take it.
# BUILD_DIR is an already-built qgmm tree; it is installed into a temporary prefix, then:
#  1. the prefix holds what ships and nothing else: the public header only, libqgmm with
#     SONAME libqgmm.so.MAJOR, plugins in <libdir>/qgmm, no test plugin, no RUNPATH into
#     the build or source tree;
#  2. the docs/api.md example (tests/test_api_example.c) and version_check.c are built out
#     of tree with find_package(qgmm) and again with pkg-config, and run on cpu and, when
#     the Vulkan plugin is installed, on vulkan (lavapipe in CI) with no QGMM_PLUGIN_PATH
#     and no LD_LIBRARY_PATH: the plugins must come from the installed folder. The C
#     example of docs/moe.md is built the same way and run on both;
#  3. a project that add_subdirectory()s the source tree builds and runs the example.
# Exit 0 pass, 1 fail, 77 skip (a sanitizer build: its libqgmm needs the sanitizer runtime).
set -euo pipefail
if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -eq 1 ]] && exit 0 || exit 2
fi
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$SRC/tests/consumer
EXAMPLE=$SRC/tests/test_api_example.c
JOBS=$(nproc)
if grep -q '^QGMM_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  echo "consumer: SKIP: $BUILD is a sanitizer build"; exit 77
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/qgmm-consumer.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
unset QGMM_PLUGIN_PATH LD_LIBRARY_PATH QGMM_EXTRA_BACKENDS PKG_CONFIG_PATH
fail() { echo "consumer: FAIL: $*" >&2; exit 1; }
step() { echo "consumer: == $*"; }
quiet() { local log=$TMP/step.log; "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$*"; }; }

# ---------------------------------------------------------------- 1. the installed files
PREFIX=$TMP/prefix
step "cmake --install $BUILD --prefix $PREFIX"
quiet cmake --install "$BUILD" --prefix "$PREFIX"
real=$(find "$PREFIX" -name 'libqgmm.so.*.*.*' -type f)
[[ -n $real ]] || fail "no libqgmm.so.MAJOR.MINOR.PATCH installed"
LIBDIR=$(dirname "$real")
VERSION=${real##*/libqgmm.so.}
soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == "libqgmm.so.${VERSION%%.*}" ]] || fail "SONAME is '$soname', expected libqgmm.so.${VERSION%%.*}"
[[ -L $LIBDIR/libqgmm.so.${VERSION%%.*} && -L $LIBDIR/libqgmm.so ]] || fail "libqgmm.so links missing"
headers=$(cd "$PREFIX/include" && find . -type f | sort | tr '\n' ' ')
[[ $headers == "./qgmm/qgmm.h " ]] || fail "installed headers are '$headers'; only qgmm/qgmm.h ships"
for f in "$LIBDIR/cmake/qgmm/qgmmConfig.cmake" "$LIBDIR/cmake/qgmm/qgmmConfigVersion.cmake" \
         "$LIBDIR/pkgconfig/qgmm.pc"; do
  [[ -f $f ]] || fail "$f not installed"
done
stray=$(find "$PREFIX" -name 'libqgmm-testplugin*' -o -name 'libqgmm-hipemu*' -o -name 'libqgmm-qgmm*' \
        -o -name 'test_*' -o -name '*.a')
[[ -z $stray ]] || fail "test files installed: $stray"
while IFS= read -r -d '' f; do
  [[ $(head -c4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  rp=$(readelf -d "$f" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p')
  [[ $rp != *"$BUILD"* && $rp != *"$SRC"* ]] || fail "${f#$PREFIX/} has RUNPATH '$rp' into the build tree"
  echo "consumer: ${f#$PREFIX/}: RUNPATH '${rp}'"
done < <(find "$PREFIX" -type f -print0)
PLUGINDIR=$LIBDIR/qgmm
PLUGINS=()
for p in "$PLUGINDIR"/libqgmm-*.so; do
  [[ -e $p ]] && { n=${p##*/libqgmm-}; PLUGINS+=("${n%.so}"); }
done
echo "consumer: version $VERSION, libdir ${LIBDIR#$PREFIX/}, plugins: ${PLUGINS[*]:-none}"
if [[ -x $PREFIX/bin/qgmm-bench ]]; then
  quiet "$PREFIX/bin/qgmm-bench" --help
fi

# Runs one consumer build's two programs: the version and plugin origin, then the example
# on cpu and on vulkan (77 from the example = no device: reported, not a failure).
run_pair() {
  local dir=$1 plugindir=$2; shift 2
  quiet "$dir/version_check" "$VERSION" "$plugindir" "$@"
  cat "$TMP/step.log"
  local deps
  deps=$(ldd "$dir/api_example")
  [[ $deps == *"libqgmm.so.${VERSION%%.*} => $(dirname "$plugindir")/"* ]] ||
    fail "$dir/api_example does not load libqgmm from $(dirname "$plugindir"): $deps"
  quiet "$dir/api_example" cpu
  echo "consumer: $(tail -1 "$TMP/step.log") (cpu)"
  if [[ " $* " == *" vulkan "* ]]; then
    local rc=0
    "$dir/api_example" vulkan >"$TMP/step.log" 2>&1 || rc=$?
    case $rc in
      0) echo "consumer: $(tail -1 "$TMP/step.log") (vulkan)" ;;
      77) echo "consumer: vulkan: no device here: $(tail -1 "$TMP/step.log")" ;;
      *) cat "$TMP/step.log" >&2; fail "$dir/api_example vulkan" ;;
    esac
  fi
}

# ---------------------------------------------------------------- 2a. find_package(qgmm)
step "find_package(qgmm) with CMAKE_PREFIX_PATH=$PREFIX"
quiet cmake -S "$HERE" -B "$TMP/fp" -DQGMM_CONSUMER_MODE=find_package -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DQGMM_EXAMPLE_SOURCE="$EXAMPLE"
quiet cmake --build "$TMP/fp" -j"$JOBS"
run_pair "$TMP/fp" "$PLUGINDIR" "${PLUGINS[@]}"

# ---------------------------------------------------------------- 2b. pkg-config
step "pkg-config with PKG_CONFIG_PATH=$LIBDIR/pkgconfig"
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
[[ $(pkg-config --modversion qgmm) == "$VERSION" ]] || fail "pkg-config --modversion qgmm is not $VERSION"
mkdir -p "$TMP/pc"
read -r -a flags <<<"$(pkg-config --cflags --libs qgmm)"
rpath=-Wl,-rpath,$(pkg-config --variable=libdir qgmm)
quiet cc -std=c11 -Wall -Wextra -Werror "$EXAMPLE" "${flags[@]}" -lm "$rpath" -o "$TMP/pc/api_example"
quiet cc -std=c11 -Wall -Wextra -Werror "$HERE/version_check.c" "${flags[@]}" "$rpath" -o "$TMP/pc/version_check"
run_pair "$TMP/pc" "$PLUGINDIR" "${PLUGINS[@]}"
# docs/moe.md's example, taken from the page itself, on cpu and vulkan
awk '/^```c$/ {on = 1; next} /^```$/ {on = 0} on' "$SRC/docs/moe.md" >"$TMP/pc/moe_example.c"
[[ -s $TMP/pc/moe_example.c ]] || fail "no C example in docs/moe.md"
quiet cc -std=c11 -Wall -Wextra -Werror "$TMP/pc/moe_example.c" "${flags[@]}" -lm "$rpath" -o "$TMP/pc/moe_example"
for be in cpu vulkan; do
  [[ $be == cpu || " ${PLUGINS[*]} " == *" $be "* ]] || continue
  rc=0
  "$TMP/pc/moe_example" $be >"$TMP/step.log" 2>&1 || rc=$?
  [[ $rc == 0 || ($rc == 77 && $be != cpu) ]] || { cat "$TMP/step.log" >&2; fail "docs/moe.md example on $be"; }
  echo "consumer: docs/moe.md example on $be: $(tail -1 "$TMP/step.log")"
done
unset PKG_CONFIG_PATH

# ---------------------------------------------------------------- 3. add_subdirectory
step "add_subdirectory($SRC) (GPU plugins off: the library alone)"
quiet cmake -S "$HERE" -B "$TMP/sub" -DQGMM_CONSUMER_MODE=subdirectory -DQGMM_SOURCE_DIR="$SRC" \
  -DQGMM_EXAMPLE_SOURCE="$EXAMPLE" -DQGMM_CUDA=OFF -DQGMM_HIP=OFF -DQGMM_VULKAN=OFF
quiet cmake --build "$TMP/sub" -j"$JOBS"
run_pair "$TMP/sub" "$TMP/sub/qgmm/lib/qgmm"
echo "consumer: PASS"
