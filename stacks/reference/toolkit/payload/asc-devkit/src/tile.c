/* Tile moves and the pipe barrier of the reference Ascend C library. */
#include <string.h>

#include "ascendc/kernel_operator.h"

void ascendc_copy_in(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows,
                     size_t cols, size_t cap_rows, size_t cap_cols)
{
    for (size_t r = 0; r < cap_rows; ++r) {
        float *out = dst + r * dst_ld;
        size_t valid = r < rows ? cols : 0;
        if (valid)
            memcpy(out, src + r * src_ld, valid * sizeof *out);
        memset(out + valid, 0, (cap_cols - valid) * sizeof *out);
    }
}

void ascendc_copy_out(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; ++r)
        memcpy(dst + r * dst_ld, src + r * src_ld, cols * sizeof *dst);
}

void ascendc_pipe_barrier(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
