/* ACL (Ascend Computing Language) API of the CPU-simulated toolkit.
 * Names, signatures and error-code values follow CANN's public acl_base.h / acl_rt.h
 * for the calls the reference stack uses. The "device" is the host CPU: device memory
 * is host memory tracked by the library, and kernels run on host threads.
 * aclrtLaunchKernel is simplified: it takes a kernel entry point and an argument array. */
#ifndef CPUSIM_ACL_H
#define CPUSIM_ACL_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;

#define ACL_SUCCESS 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_FILE 100003
#define ACL_ERROR_PARSE_FILE 100006
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_FAILURE 500001
#define ACL_ERROR_RT_DEV_SETUP_ERROR 507033 /* hicann/runtime rt_error_codes.h l.115 */

typedef enum {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
} aclrtMemcpyKind;

typedef enum {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
} aclrtMemMallocPolicy;

typedef void *aclrtStream;

typedef struct {
    uint32_t x, y, z;
} aclrtDim3;

/* A kernel entry point as ascendcc emits it: unpacks args[i] (pointers to each argument). */
typedef void (*aclrtKernelEntry)(void **args);

/* What a kernel sees of the block it runs as (read through the Ascend C devkit's builtins). */
typedef struct {
    aclrtDim3 blockIdx;
    aclrtDim3 gridDim;
    aclrtDim3 blockDim;
    void *sharedMem;
    size_t sharedMemBytes;
} aclrtCpuSimBlock;

aclError aclInit(const char *configPath);
aclError aclFinalize(void);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtGetDeviceCount(uint32_t *count);
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtLaunchKernel(aclrtKernelEntry entry, aclrtDim3 gridDim, aclrtDim3 blockDim,
                           size_t sharedMemBytes, void **args, aclrtStream stream);
const char *aclGetRecentErrMsg(void);

/* CPU-simulation only: the block the calling kernel thread executes. */
const aclrtCpuSimBlock *aclrtCpuSimCurrentBlock(void);

#ifdef __cplusplus
}
#endif
#endif
