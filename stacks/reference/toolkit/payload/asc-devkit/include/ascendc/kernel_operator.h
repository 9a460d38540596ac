/* Ascend C support header of the reference stack (CPU simulation; the real one is
 * kernel_operator.h from CANN's asc-devkit). The toolkit installs it as
 * <toolkit>/ascendc/include/ascendc/kernel_operator.h, as CANN ships asc-devkit inside its
 * toolkit. Kernels include it and are compiled by the toolkit's ascendcc, which defines the
 * keywords and records kernel metadata. */
#ifndef ASCENDC_KERNEL_OPERATOR_H
#define ASCENDC_KERNEL_OPERATOR_H

#ifndef __ASCENDCC__
#error "ascendc/kernel_operator.h: compile with the toolkit's ascendcc (source <toolkit>/set_env.sh); plain cc records no kernel metadata"
#endif

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"

#define ASCENDC_API_VERSION 1

/* Function qualifiers: ascendcc defines them; restated so the header stands alone. */
#ifndef __global__
#define __global__ __attribute__((visibility("default")))
#endif
#ifndef __aicore__
#define __aicore__
#endif
/* Memory-space qualifiers: on the CPU device both are host memory. */
#define __l1__
#define __ddr__

/* Block (AI core) and lane index builtins. */
static inline uint32_t get_block_num(void)
{
    const aclrtCpuSimBlock *b = aclrtCpuSimCurrentBlock();
    return b->gridDim.x * b->gridDim.y * b->gridDim.z;
}
static inline uint32_t get_block_idx(void)
{
    const aclrtCpuSimBlock *b = aclrtCpuSimCurrentBlock();
    return b->blockIdx.x + b->gridDim.x * (b->blockIdx.y + b->gridDim.y * b->blockIdx.z);
}
static inline uint32_t get_lane_num_x(void) { return aclrtCpuSimCurrentBlock()->blockDim.x; }
static inline uint32_t get_lane_num_y(void) { return aclrtCpuSimCurrentBlock()->blockDim.y; }

#ifdef __cplusplus
extern "C" {
#endif
/* Copy a rows x cols tile from src (leading dimension src_ld) into dst (dst_ld), zero-filling
 * dst up to cap_rows x cap_cols: a DDR -> L1 move with padding at the matrix edges. */
void ascendc_copy_in(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows,
                     size_t cols, size_t cap_rows, size_t cap_cols);
/* Copy the valid rows x cols part of a tile back to DDR. */
void ascendc_copy_out(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols);
/* Pipe barrier: all moves issued before it are complete after it. */
void ascendc_pipe_barrier(void);
#ifdef __cplusplus
}
#endif

#define ascendc_sync() ascendc_pipe_barrier()

#endif
