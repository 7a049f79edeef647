#!/usr/bin/env bash
# The Vulkan conformance suite with the Khronos validation layer loaded: it must pass and
# the layer must stay silent (any "Validation Error", VUID or layer warning fails).
# SKIP (77) where the layer or a Vulkan device is missing.   usage: vulkan_validation.sh BIN
# A layer unpacked elsewhere is found through VK_LAYER_PATH (as the loader finds it).
set -u
BIN=${1:?path to qgmm-conformance}
found=0
vlp=${VK_LAYER_PATH:-}
for d in ${vlp//:/ } /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d; do
  [ -f "$d/VkLayer_khronos_validation.json" ] && found=1
done
if [ $found = 0 ]; then echo "SKIP: VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)"; exit 77; fi
log=$(mktemp)
VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation "$BIN" --backend vulkan --require-reference > "$log" 2>&1
rc=$?
tail -1 "$log"
if [ $rc = 77 ]; then echo "SKIP: no Vulkan device"; rm -f "$log"; exit 77; fi
n=$(grep -cE "Validation (Error|Warning|Performance)|VUID-|UNASSIGNED-" "$log")
grep -m5 -E "Validation (Error|Warning|Performance)|VUID-|UNASSIGNED-" "$log" | cut -c1-300
rm -f "$log"
echo "validation layer messages: $n"
[ $rc = 0 ] && [ "$n" = 0 ]
