/* Bare-mode stand-in for <hip/hip_fp16.h> (scripts/hip-gfx942-check.sh puts this folder
 * first on the include path): __half and __half2float come from kernels/qgmm_dialect_hip.h,
 * so the ROCm header, which needs the full HIP runtime headers, is never read. */
#include "qgmm_dialect_hip.h"
