#!/usr/bin/env bash
# Installs what qgmm needs on Debian 12 (idempotent: packages already present are skipped).
# CUDA's nvcc is expected at /usr/local/cuda when present; without it the CUDA plugin is
# simply not built.
set -euo pipefail
PKGS=(cmake make gcc g++ git pkg-config python3 python3-numpy
      libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools vulkan-validationlayers
      libsqlite3-dev sqlite3 libcivetweb-dev
      hipcc libamdhip64-dev clang-19 lld-19
      libclang-rt-19-dev   # libFuzzer and the sanitizer runtimes of clang-19 (scripts/fuzz.sh)
      curl)
if [[ "${QGMM_BROWSER_TESTS:-1}" == 1 ]]; then
  PKGS+=(chromium chromium-driver)
  # Node may come from elsewhere than Debian (its npm then conflicts with Debian's): only
  # ask apt for it when no npm is on the PATH.
  command -v npm >/dev/null 2>&1 || PKGS+=(nodejs npm)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "[qgmm] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "[qgmm] dependencies present"
