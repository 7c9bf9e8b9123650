/* runtime/cuda_drv.h: our own declarations of the part of the CUDA driver
 * API that runtime/gpu_cuda.c uses.
 *
 * arrayc is built without the CUDA toolkit and loads libcuda.so.1 with
 * dlopen at run time (as Halide's CUDA runtime and Blender's cuew do), so
 * it cannot include <cuda.h>. This header declares what we need with the
 * ABI of the driver: handles are pointers to opaque structs, CUdevice is an
 * int, CUdeviceptr an unsigned long long, and every enum value is written
 * out EXPLICITLY with the value cuda.h (CUDA 13.0) gives it. The driver
 * never renumbers an enum value or changes an exported symbol's signature
 * (a changed signature gets a new `_v2` symbol), so these stay valid for
 * every driver that has the symbols.
 *
 * CU_DRV_API lists each entry point once: its field name in the table that
 * gpu_cuda.c fills, the exact symbol it is exported as (the versioned name
 * cuda.h's macros map the plain name to when the API has one; never the
 * `_ptsz`/`_ptds` per-thread-default-stream variants, since every call names
 * an explicit stream), and whether a device can be used without it. The
 * function TYPES (not pointer types) are cu_<field>_fn, so that a fake
 * driver for the tests (test/unit/cuda_mock.c) can declare its definitions
 * with them and the compiler checks that both agree.
 */
#ifndef ARRAYC_RUNTIME_CUDA_DRV_H
#define ARRAYC_RUNTIME_CUDA_DRV_H

#include <stddef.h>

/* ---- handles ---- */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUkern_st *CUkernel;

/* ---- enums (values from cuda.h) ---- */
typedef enum CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_ECC_UNCORRECTABLE = 214,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
  CUDA_ERROR_INVALID_PC = 718,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef enum CUdevice_attribute {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115
} CUdevice_attribute;

typedef enum CUfunction_attribute {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
} CUfunction_attribute;

typedef enum CUjit_option {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
} CUjit_option;

typedef enum CUmemPool_attribute {
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4 /* value: a uint64_t */
} CUmemPool_attribute;

enum { CU_STREAM_NON_BLOCKING = 0x1 };

/* Dynamic shared memory a kernel may use without opting in (48 KiB on
 * every architecture); more needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. */
enum { CU_SMEM_DEFAULT_LIMIT = 48 * 1024 };

typedef size_t (*CUoccupancyB2DSize)(int block_size);

/* ---- entry points ---- */
typedef CUresult cu_GetErrorName_fn(CUresult error, const char **str);
typedef CUresult cu_GetErrorString_fn(CUresult error, const char **str);
typedef CUresult cu_Init_fn(unsigned int flags);
typedef CUresult cu_DriverGetVersion_fn(int *version);
typedef CUresult cu_DeviceGetCount_fn(int *count);
typedef CUresult cu_DeviceGet_fn(CUdevice *dev, int ordinal);
typedef CUresult cu_DeviceGetName_fn(char *name, int len, CUdevice dev);
typedef CUresult cu_DeviceGetAttribute_fn(int *value, CUdevice_attribute attr, CUdevice dev);
typedef CUresult cu_DevicePrimaryCtxRetain_fn(CUcontext *ctx, CUdevice dev);
typedef CUresult cu_DevicePrimaryCtxRelease_fn(CUdevice dev);
typedef CUresult cu_CtxPushCurrent_fn(CUcontext ctx);
typedef CUresult cu_CtxPopCurrent_fn(CUcontext *ctx);
typedef CUresult cu_StreamCreate_fn(CUstream *stream, unsigned int flags);
typedef CUresult cu_StreamSynchronize_fn(CUstream stream);
typedef CUresult cu_StreamDestroy_fn(CUstream stream);
typedef CUresult cu_MemAlloc_fn(CUdeviceptr *p, size_t bytes);
typedef CUresult cu_MemFree_fn(CUdeviceptr p);
typedef CUresult cu_MemAllocAsync_fn(CUdeviceptr *p, size_t bytes, CUstream stream);
typedef CUresult cu_MemFreeAsync_fn(CUdeviceptr p, CUstream stream);
typedef CUresult cu_DeviceGetMemPool_fn(CUmemoryPool *pool, CUdevice dev);
typedef CUresult cu_MemPoolSetAttribute_fn(CUmemoryPool pool, CUmemPool_attribute attr,
                                           void *value);
typedef CUresult cu_MemPoolTrimTo_fn(CUmemoryPool pool, size_t keep);
typedef CUresult cu_MemHostAlloc_fn(void **p, size_t bytes, unsigned int flags);
typedef CUresult cu_MemFreeHost_fn(void *p);
typedef CUresult cu_MemcpyHtoDAsync_fn(CUdeviceptr dst, const void *src, size_t bytes,
                                       CUstream stream);
typedef CUresult cu_MemcpyDtoHAsync_fn(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
typedef CUresult cu_MemcpyDtoDAsync_fn(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                       CUstream stream);
typedef CUresult cu_MemsetD8Async_fn(CUdeviceptr dst, unsigned char value, size_t n,
                                     CUstream stream);
typedef CUresult cu_ModuleLoadDataEx_fn(CUmodule *mod, const void *image, unsigned int nopts,
                                        CUjit_option *opts, void **values);
typedef CUresult cu_ModuleGetFunction_fn(CUfunction *fn, CUmodule mod, const char *name);
typedef CUresult cu_ModuleUnload_fn(CUmodule mod);
typedef CUresult cu_LaunchKernel_fn(CUfunction fn, unsigned int gx, unsigned int gy,
                                    unsigned int gz, unsigned int bx, unsigned int by,
                                    unsigned int bz, unsigned int smem, CUstream stream,
                                    void **params, void **extra);
typedef CUresult cu_OccupancyMaxPotentialBlockSize_fn(int *min_grid, int *block, CUfunction fn,
                                                      CUoccupancyB2DSize smem_of_block, size_t smem,
                                                      int block_limit);
typedef CUresult cu_OccupancyMaxActiveBlocksPerMultiprocessor_fn(int *blocks, CUfunction fn,
                                                                 int block, size_t smem);
typedef CUresult cu_FuncGetAttribute_fn(int *value, CUfunction_attribute attr, CUfunction fn);
typedef CUresult cu_FuncSetAttribute_fn(CUfunction fn, CUfunction_attribute attr, int value);

/* Graphs (CUDA 12: CUDA_KERNEL_NODE_PARAMS is this _v2 layout, taken by
 * cuGraphAddKernelNode_v2; kern and ctx NULL: func, in the current
 * context). The kernelParams values are copied when the node is added. */
typedef struct CUDA_KERNEL_NODE_PARAMS_v2 {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS_v2;
typedef CUresult cu_GraphCreate_fn(CUgraph *graph, unsigned int flags);
typedef CUresult cu_GraphAddKernelNode_fn(CUgraphNode *node, CUgraph graph,
                                          const CUgraphNode *deps, size_t ndeps,
                                          const CUDA_KERNEL_NODE_PARAMS_v2 *params);
typedef CUresult cu_GraphInstantiateWithFlags_fn(CUgraphExec *exec, CUgraph graph,
                                                 unsigned long long flags);
typedef CUresult cu_GraphLaunch_fn(CUgraphExec exec, CUstream stream);
typedef CUresult cu_GraphExecDestroy_fn(CUgraphExec exec);
typedef CUresult cu_GraphDestroy_fn(CUgraph graph);

/* X(field, exported symbol, required). The optional ones are the
 * stream-ordered allocator (CUDA 11.2): without them, or on a device
 * without memory pools, gpu_cuda.c uses cuMemAlloc/cuMemFree; pinned
 * host memory (cuMemHostAlloc, cuMemFreeHost: in every driver, optional
 * only so that a driver or mock without them still works, through
 * pageable copies); and graphs (cuGraphAddKernelNode_v2 is CUDA 12.0):
 * without them, loop bodies are launched kernel by kernel. Everything
 * required is in every driver since CUDA 11.0 (cuDevicePrimaryCtxRelease_v2
 * is the newest). */
#define CU_DRV_API(X)                                                                              \
  X(GetErrorName, "cuGetErrorName", 1)                                                             \
  X(GetErrorString, "cuGetErrorString", 1)                                                         \
  X(Init, "cuInit", 1)                                                                             \
  X(DriverGetVersion, "cuDriverGetVersion", 1)                                                     \
  X(DeviceGetCount, "cuDeviceGetCount", 1)                                                         \
  X(DeviceGet, "cuDeviceGet", 1)                                                                   \
  X(DeviceGetName, "cuDeviceGetName", 1)                                                           \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", 1)                                                 \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1)                                         \
  X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 1)                                    \
  X(CtxPushCurrent, "cuCtxPushCurrent_v2", 1)                                                      \
  X(CtxPopCurrent, "cuCtxPopCurrent_v2", 1)                                                        \
  X(StreamCreate, "cuStreamCreate", 1)                                                             \
  X(StreamSynchronize, "cuStreamSynchronize", 1)                                                   \
  X(StreamDestroy, "cuStreamDestroy_v2", 1)                                                        \
  X(MemAlloc, "cuMemAlloc_v2", 1)                                                                  \
  X(MemFree, "cuMemFree_v2", 1)                                                                    \
  X(MemAllocAsync, "cuMemAllocAsync", 0)                                                           \
  X(MemFreeAsync, "cuMemFreeAsync", 0)                                                             \
  X(DeviceGetMemPool, "cuDeviceGetMemPool", 0)                                                     \
  X(MemPoolSetAttribute, "cuMemPoolSetAttribute", 0)                                               \
  X(MemPoolTrimTo, "cuMemPoolTrimTo", 0)                                                           \
  X(MemHostAlloc, "cuMemHostAlloc", 0)                                                             \
  X(MemFreeHost, "cuMemFreeHost", 0)                                                               \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", 1)                                                    \
  X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 1)                                                    \
  X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", 1)                                                    \
  X(MemsetD8Async, "cuMemsetD8Async", 1)                                                           \
  X(ModuleLoadDataEx, "cuModuleLoadDataEx", 1)                                                     \
  X(ModuleGetFunction, "cuModuleGetFunction", 1)                                                   \
  X(ModuleUnload, "cuModuleUnload", 1)                                                             \
  X(LaunchKernel, "cuLaunchKernel", 1)                                                             \
  X(OccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize", 1)                         \
  X(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 1)   \
  X(FuncGetAttribute, "cuFuncGetAttribute", 1)                                                     \
  X(FuncSetAttribute, "cuFuncSetAttribute", 1)                                                     \
  X(GraphCreate, "cuGraphCreate", 0)                                                               \
  X(GraphAddKernelNode, "cuGraphAddKernelNode_v2", 0)                                              \
  X(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 0)                                   \
  X(GraphLaunch, "cuGraphLaunch", 0)                                                               \
  X(GraphExecDestroy, "cuGraphExecDestroy", 0)                                                     \
  X(GraphDestroy, "cuGraphDestroy", 0)

#endif
