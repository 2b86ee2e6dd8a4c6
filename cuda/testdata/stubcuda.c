/* A stand-in libcuda for tests of the dlopen shim: it exports every entry
 * point package cuda binds. cuInit succeeds; cuDriverGetVersion reports
 * KD_STUB_VERSION; every other call fails with CUDA_ERROR_NO_DEVICE (100).
 * Built with -DKD_STUB_OLD_TIMER it exports the event timer under its name
 * before CUDA 12.8 (cuEventElapsedTime) instead of cuEventElapsedTime_v2.
 *
 *   gcc -shared -fPIC -DKD_STUB_VERSION=13000 -o libstub.so stubcuda.c
 */
#ifndef KD_STUB_VERSION
#define KD_STUB_VERSION 13000
#endif

#define NO_DEVICE 100
#define FAIL(name) int name() { return NO_DEVICE; }

int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDriverGetVersion(int *v) { *v = KD_STUB_VERSION; return 0; }
FAIL(cuDeviceGetCount)
FAIL(cuDeviceGet)
FAIL(cuDeviceGetName)
FAIL(cuDeviceGetAttribute)
FAIL(cuDeviceTotalMem_v2)
FAIL(cuDevicePrimaryCtxRetain)
FAIL(cuDevicePrimaryCtxRelease_v2)
FAIL(cuCtxSetCurrent)
FAIL(cuCtxSynchronize)
FAIL(cuMemAlloc_v2)
FAIL(cuMemFree_v2)
FAIL(cuMemcpyHtoD_v2)
FAIL(cuMemcpyDtoH_v2)
FAIL(cuMemsetD8_v2)
FAIL(cuModuleLoadData)
FAIL(cuModuleUnload)
FAIL(cuModuleGetFunction)
FAIL(cuLaunchKernel)
FAIL(cuEventCreate)
FAIL(cuEventRecord)
FAIL(cuEventSynchronize)
FAIL(cuEventDestroy_v2)
#ifdef KD_STUB_OLD_TIMER
FAIL(cuEventElapsedTime)
#else
FAIL(cuEventElapsedTime_v2)
#endif
