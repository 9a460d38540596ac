/* CPU "device" behind the simulated ACL API: device memory is tracked host memory,
 * kernels run block by block on a pool of host threads. */
#define _GNU_SOURCE
#include "acl/acl.h"

#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LANES 1024u

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static int device_set;
static __thread char recent_err[512];
static __thread aclrtCpuSimBlock current_block;

typedef struct allocation {
    char *base;
    size_t size;
    struct allocation *next;
} allocation;
static allocation *allocations;

static aclError fail(aclError code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(recent_err, sizeof recent_err, "EE%d: ", code);
    vsnprintf(recent_err + n, sizeof recent_err - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

const char *aclGetRecentErrMsg(void) { return recent_err[0] ? recent_err : NULL; }

const aclrtCpuSimBlock *aclrtCpuSimCurrentBlock(void) { return &current_block; }

aclError aclInit(const char *configPath)
{
    (void)configPath;
    pthread_mutex_lock(&state_lock);
    int was = initialized;
    initialized = 1;
    pthread_mutex_unlock(&state_lock);
    return was ? fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit called twice") : ACL_SUCCESS;
}

aclError aclFinalize(void)
{
    pthread_mutex_lock(&state_lock);
    int was = initialized;
    initialized = device_set = 0;
    pthread_mutex_unlock(&state_lock);
    return was ? ACL_SUCCESS : fail(ACL_ERROR_UNINITIALIZE, "aclFinalize before aclInit");
}

/* The driver's HAL: the host's libascend_hal.so with a driver, devlib's stand-in without one. */
extern int halGetDeviceCount(uint32_t *count);

aclError aclrtGetDeviceCount(uint32_t *count)
{
    if (!count)
        return fail(ACL_ERROR_INVALID_PARAM, "count is NULL");
    if (halGetDeviceCount(count) != 0)
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "the driver reports no device");
    return ACL_SUCCESS;
}

/* Device setup loads the AICPU kernel package as CANN's tsd client does (hicann/runtime v9.0.0
 * src/tsd/tsdclient/src/client_manager.cpp l.331-374): exactly one
 * ${ASCEND_AICPU_PATH}/opp/Ascend/aicpu/Ascend*-aicpu_syskernels.tar.gz (910B's title); a missing one
 * fails the setup as the driver's check of it does (E30006, then 507033). */
static aclError load_aicpu_package(void)
{
    const char *root = getenv("ASCEND_AICPU_PATH");
    if (!root || !*root)
        return fail(ACL_ERROR_RT_DEV_SETUP_ERROR, "E30006: Failed to verify the OPP: ASCEND_AICPU_PATH is not set");
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/opp/Ascend/aicpu/Ascend*-aicpu_syskernels.tar.gz", root);
    glob_t found;
    int rc = glob(pattern, 0, NULL, &found);
    size_t count = rc == 0 ? found.gl_pathc : 0;
    globfree(&found);
    if (count != 1)
        return fail(ACL_ERROR_RT_DEV_SETUP_ERROR, "E30006: Failed to verify the OPP: %zu files match %s", count,
                    pattern);
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId)
{
    if (!initialized)
        return fail(ACL_ERROR_UNINITIALIZE, "aclrtSetDevice before aclInit");
    if (deviceId != 0)
        return fail(ACL_ERROR_RT_INVALID_DEVICEID,
                    "device %d does not exist: the CPU simulation has one device, 0", deviceId);
    aclError loaded = load_aicpu_package();
    if (loaded != ACL_SUCCESS)
        return loaded;
    device_set = 1;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    if (deviceId != 0)
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d does not exist", deviceId);
    device_set = 0;
    return ACL_SUCCESS;
}

static aclError need_device(const char *call)
{
    if (!initialized)
        return fail(ACL_ERROR_UNINITIALIZE, "%s before aclInit", call);
    if (!device_set)
        return fail(ACL_ERROR_RT_CONTEXT_NULL, "%s without a current device (call aclrtSetDevice)", call);
    return ACL_SUCCESS;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    (void)policy;
    aclError err = need_device("aclrtMalloc");
    if (err)
        return err;
    if (!devPtr || size == 0)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is NULL or size is 0");
    allocation *a = malloc(sizeof *a);
    char *mem = calloc(1, size);
    if (!a || !mem) {
        free(a);
        free(mem);
        return fail(ACL_ERROR_BAD_ALLOC, "aclrtMalloc: out of memory for %zu bytes", size);
    }
    a->base = mem;
    a->size = size;
    pthread_mutex_lock(&state_lock);
    a->next = allocations;
    allocations = a;
    pthread_mutex_unlock(&state_lock);
    *devPtr = mem;
    return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr)
{
    pthread_mutex_lock(&state_lock);
    for (allocation **p = &allocations; *p; p = &(*p)->next) {
        if ((*p)->base == devPtr) {
            allocation *a = *p;
            *p = a->next;
            pthread_mutex_unlock(&state_lock);
            free(a->base);
            free(a);
            return ACL_SUCCESS;
        }
    }
    pthread_mutex_unlock(&state_lock);
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: %p is not device memory", devPtr);
}

/* Bytes of device memory available from ptr to the end of its allocation, 0 if not device memory. */
static size_t device_extent(const void *ptr)
{
    size_t extent = 0;
    pthread_mutex_lock(&state_lock);
    for (allocation *a = allocations; a; a = a->next) {
        const char *c = ptr;
        if (c >= a->base && c < a->base + a->size) {
            extent = (size_t)(a->base + a->size - c);
            break;
        }
    }
    pthread_mutex_unlock(&state_lock);
    return extent;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    aclError err = need_device("aclrtMemcpy");
    if (err)
        return err;
    if (!dst || !src)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: NULL pointer");
    if (count > destMax)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: count %zu exceeds destMax %zu", count, destMax);
    int dst_dev = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    int src_dev = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEVICE_TO_DEVICE)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: invalid kind %d", (int)kind);
    if (dst_dev && device_extent(dst) < count)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: destination is not %zu bytes of device memory", count);
    if (src_dev && device_extent(src) < count)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: source is not %zu bytes of device memory", count);
    memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream)
{
    aclError err = need_device("aclrtCreateStream");
    if (err)
        return err;
    if (!stream)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
    static int token;
    *stream = &token;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    (void)stream;
    return ACL_SUCCESS;
}

/* Launches run to completion before returning, so a stream has nothing pending. */
aclError aclrtSynchronizeStream(aclrtStream stream)
{
    (void)stream;
    return need_device("aclrtSynchronizeStream");
}

typedef struct {
    aclrtKernelEntry entry;
    void **args;
    aclrtDim3 grid, block;
    size_t shared_mem;
    uint32_t total;
    uint32_t next;
    pthread_mutex_t lock;
} launch;

static void *block_worker(void *arg)
{
    launch *l = arg;
    void *shared = l->shared_mem ? calloc(1, l->shared_mem) : NULL;
    for (;;) {
        pthread_mutex_lock(&l->lock);
        uint32_t idx = l->next++;
        pthread_mutex_unlock(&l->lock);
        if (idx >= l->total)
            break;
        current_block.blockIdx.x = idx % l->grid.x;
        current_block.blockIdx.y = (idx / l->grid.x) % l->grid.y;
        current_block.blockIdx.z = idx / (l->grid.x * l->grid.y);
        current_block.gridDim = l->grid;
        current_block.blockDim = l->block;
        current_block.sharedMem = shared;
        current_block.sharedMemBytes = l->shared_mem;
        if (shared)
            memset(shared, 0, l->shared_mem);
        l->entry(l->args);
    }
    free(shared);
    return NULL;
}

aclError aclrtLaunchKernel(aclrtKernelEntry entry, aclrtDim3 gridDim, aclrtDim3 blockDim,
                           size_t sharedMemBytes, void **args, aclrtStream stream)
{
    (void)stream;
    aclError err = need_device("aclrtLaunchKernel");
    if (err)
        return err;
    if (!entry)
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtLaunchKernel: kernel entry is NULL");
    if (!gridDim.x || !gridDim.y || !gridDim.z)
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtLaunchKernel: grid dim %u,%u,%u has a 0",
                    gridDim.x, gridDim.y, gridDim.z);
    if (!blockDim.x || !blockDim.y || !blockDim.z)
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtLaunchKernel: block dim %u,%u,%u has a 0",
                    blockDim.x, blockDim.y, blockDim.z);
    if ((uint64_t)blockDim.x * blockDim.y * blockDim.z > MAX_LANES)
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtLaunchKernel: block dim %u,%u,%u exceeds %u lanes",
                    blockDim.x, blockDim.y, blockDim.z, MAX_LANES);
    uint64_t total = (uint64_t)gridDim.x * gridDim.y * gridDim.z;
    if (total > UINT32_MAX)
        return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtLaunchKernel: too many blocks");
    launch l = {entry, args, gridDim, blockDim, sharedMemBytes, (uint32_t)total, 0, PTHREAD_MUTEX_INITIALIZER};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("ASCEND_CPUSIM_THREADS");
    if (env && atoi(env) > 0)
        cores = atoi(env);
    uint32_t nthreads = cores > 0 ? (uint32_t)cores : 1;
    if (nthreads > l.total)
        nthreads = l.total;
    pthread_t *threads = calloc(nthreads, sizeof *threads);
    if (!threads)
        return fail(ACL_ERROR_BAD_ALLOC, "aclrtLaunchKernel: out of memory");
    uint32_t started = 0;
    for (; started < nthreads; ++started)
        if (pthread_create(&threads[started], NULL, block_worker, &l) != 0)
            break;
    for (uint32_t i = 0; i < started; ++i)
        pthread_join(threads[i], NULL);
    free(threads);
    if (!started)
        return fail(ACL_ERROR_FAILURE, "aclrtLaunchKernel: could not start a worker thread");
    return ACL_SUCCESS;
}
