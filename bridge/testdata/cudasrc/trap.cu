// trap.cu: an adapter whose kernel traps in every block
// (bridge/cudasrc_test.go): each case fails with class launch-error, the
// error a sticky cudaErrorLaunchFailure, and the worker is replaced
// before the next case. It declines K = 2048 (KD_ADAPTER_UNSUPPORTED):
// those cases are not tested.
#include <kd_adapter.h>

__global__ void always_trap(int32_t *out)
{
    if (threadIdx.x == 0) __trap();
    out[blockIdx.x] = 0;
}

int kd_adapter_topk_transform(const kd_topk_params *p, cudaStream_t stream)
{
    if (p->k == 2048) return KD_ADAPTER_UNSUPPORTED;
    always_trap<<<p->batch, 32, 0, stream>>>(p->page_indices);
    return cudaGetLastError();
}
