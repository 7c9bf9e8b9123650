/* lib/api/runtime_dev.h: a runtime's CUDA device, for code outside the
 * compiler that moves array elements itself: the distributed layer
 * (dist/staging.c) sends and receives blocks from device memory or
 * through pinned host memory. It cannot include function_impl.h, which
 * needs LLVM's headers, so this one accessor has a header of its own.
 */
#ifndef ARRAYC_API_RUNTIME_DEV_H
#define ARRAYC_API_RUNTIME_DEV_H

#include "arrayc/runtime.h"
#include "runtime/gpu.h"

/* The CUDA device of an AC_BACKEND_GPU runtime (borrowed: it lives as long
 * as rt), NULL for every other backend (the SIMT emulator's device memory
 * is host memory: nothing to stage). Defined in runtime.c. */
rt_gpu *api_runtime_cuda(const ac_runtime *rt);

#endif
