/* kd_adapter_info.cu: built into every bring-your-own adapter library
 * (bridge/cudasrc.go compiles it beside the user's sources, with nvcc for
 * the GPU or kernels/emu/emu_cxx.py for the emulator; docs/byo.md). The
 * worker (bridge/adapter.go) asks the library these besides the adapter
 * functions of kd_adapter.h. */

#include "kd_adapter.h"

#include <string.h>

/* kd_adapter_params_size returns sizeof the parameter struct of contract
 * as this library was compiled, 0 for a contract it does not know: the
 * worker refuses a library whose struct differs from the one it packs. */
KD_ADAPTER_API size_t kd_adapter_params_size(const char *contract)
{
#define KD_ADAPTER_SIZE(name, params) \
    if (strcmp(contract, #name) == 0) return sizeof(params);
    KD_ADAPTER_KERNELS(KD_ADAPTER_SIZE)
#undef KD_ADAPTER_SIZE
    return 0;
}

/* kd_adapter_synchronize waits for the device work an adapter function
 * launched and returns the first error it met (cudaDeviceSynchronize: on
 * the emulator, a thread that trapped, which is sticky as on the device). */
KD_ADAPTER_API int kd_adapter_synchronize(void) { return static_cast<int>(cudaDeviceSynchronize()); }

/* kd_adapter_error_name returns the runtime's name of a cudaError_t an
 * adapter function returned ("cudaErrorLaunchFailure"). */
KD_ADAPTER_API const char *kd_adapter_error_name(int code) { return cudaGetErrorName(static_cast<cudaError_t>(code)); }
