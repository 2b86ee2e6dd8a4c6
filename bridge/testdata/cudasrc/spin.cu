// spin.cu: a deliberately broken adapter (bridge/cudasrc_test.go): thread
// (0,0,0) of block (1,0,0) waits for a flag no thread ever sets, as a
// kernel whose blocks wait on each other without a grid-wide barrier
// does. On the emulator the launch never ends; the harness's time-out
// must name the block and thread that spin (the emulator's hang report).
#include <kd_adapter.h>

__global__ void spin(volatile int *flag)
{
    if (blockIdx.x == 1 && threadIdx.x == 0)
        while (*flag == 0) {
        }
}

int kd_adapter_topk_transform(const kd_topk_params *p, cudaStream_t stream)
{
    (void)p;
    int *flag = nullptr;
    if (cudaMalloc(&flag, sizeof *flag) != cudaSuccess) return cudaGetLastError();
    cudaMemsetAsync(flag, 0, sizeof *flag, stream);
    spin<<<2, 32, 0, stream>>>(flag);
    return cudaGetLastError();
}
