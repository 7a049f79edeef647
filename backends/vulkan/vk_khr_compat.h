/* vk_khr_compat.h — the VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16 structures,
 * enums and entry point, under qgmm_ names. Why: Debian 12's Vulkan headers (1.3.239) predate
 * both extensions, but the drivers we run on (NVIDIA 580) expose them; the values are the
 * registry's (vk.xml), so the structures are ABI-identical to the official ones. */
#ifndef QGMM_VK_KHR_COMPAT_H
#define QGMM_VK_KHR_COMPAT_H
#include <vulkan/vulkan.h>

#define QGMM_VK_KHR_COOPERATIVE_MATRIX_NAME "VK_KHR_cooperative_matrix"
#define QGMM_VK_KHR_SHADER_BFLOAT16_NAME "VK_KHR_shader_bfloat16"
#define QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define QGMM_VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
#define QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR ((VkStructureType)1000141000)
#define QGMM_VK_COMPONENT_TYPE_FLOAT16_KHR 0u
#define QGMM_VK_COMPONENT_TYPE_FLOAT32_KHR 1u
#define QGMM_VK_COMPONENT_TYPE_BFLOAT16_KHR 1000141000u
#define QGMM_VK_SCOPE_SUBGROUP_KHR 3u

typedef struct {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} qgmm_VkPhysicalDeviceCooperativeMatrixFeaturesKHR;

typedef struct {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    uint32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    uint32_t scope; /* VkScopeKHR */
} qgmm_VkCooperativeMatrixPropertiesKHR;

typedef struct {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderBFloat16Type;
    VkBool32 shaderBFloat16DotProduct;
    VkBool32 shaderBFloat16CooperativeMatrix;
} qgmm_VkPhysicalDeviceShaderBfloat16FeaturesKHR;

typedef VkResult (*qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice, uint32_t *, qgmm_VkCooperativeMatrixPropertiesKHR *);
/* VK_NV_cooperative_matrix2 (workgroup-scope matrices with flexible dimensions) */
#define QGMM_VK_NV_COOPERATIVE_MATRIX_2_NAME "VK_NV_cooperative_matrix2"
#define QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV ((VkStructureType)1000593000)
#define QGMM_VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV ((VkStructureType)1000593001)
#define QGMM_VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV ((VkStructureType)1000593002)
#define QGMM_VK_SCOPE_WORKGROUP_KHR 2u

typedef struct {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrixWorkgroupScope;
    VkBool32 cooperativeMatrixFlexibleDimensions;
    VkBool32 cooperativeMatrixReductions;
    VkBool32 cooperativeMatrixConversions;
    VkBool32 cooperativeMatrixPerElementOperations;
    VkBool32 cooperativeMatrixTensorAddressing;
    VkBool32 cooperativeMatrixBlockLoads;
} qgmm_VkPhysicalDeviceCooperativeMatrix2FeaturesNV;

typedef struct {
    VkStructureType sType;
    void *pNext;
    uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
    uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension;
    uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory;
} qgmm_VkPhysicalDeviceCooperativeMatrix2PropertiesNV;

typedef struct {
    VkStructureType sType;
    void *pNext;
    uint32_t MGranularity, NGranularity, KGranularity;
    uint32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    uint32_t scope; /* VkScopeKHR */
    uint32_t workgroupInvocations;
} qgmm_VkCooperativeMatrixFlexibleDimensionsPropertiesNV;

typedef VkResult (*qgmm_PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)(
    VkPhysicalDevice, uint32_t *, qgmm_VkCooperativeMatrixFlexibleDimensionsPropertiesNV *);
#endif
