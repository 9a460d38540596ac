/* Ascend runtime of the reference stack: loads a kernel library, validates its metadata
 * and launch arguments, and launches through the toolkit's ACL (aclrtLaunchKernel).
 * Every call returns an ACL error code (0 = success); ascend_runtime_last_error() says why. */
#ifndef ASCEND_RUNTIME_H
#define ASCEND_RUNTIME_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* One launch argument. type is a kernel signature type: "float32*", "int32", "uint32",
 * "int64", "uint64" or "float32"; pointers are device pointers. */
typedef struct {
    const char *type;
    union {
        void *ptr;
        int64_t i;
        double f;
    } value;
} ascend_kernel_arg;

int ascend_runtime_init(int32_t device_id);
int ascend_malloc(void **dev_ptr, size_t size);
int ascend_free(void *dev_ptr);
int ascend_memcpy_to_device(void *dst, const void *src, size_t size);
int ascend_memcpy_to_host(void *dst, const void *src, size_t size);
/* Launch the (first) kernel of the library at path. */
int launch_kernel(const char *path, const uint32_t grid[3], const uint32_t block[3], size_t shared_mem,
                  const ascend_kernel_arg *args, size_t nargs);
const char *ascend_runtime_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
