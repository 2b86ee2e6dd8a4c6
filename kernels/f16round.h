/* f16round.h: rounding through IEEE 754 binary16, for the fault builds
 * that model a kernel working in fp16 (kernels/faults.txt:
 * FP8_DOUBLE_ROUND, TOPK_COARSE_ONLY). A normal build calls nothing here. */

#ifndef KD_F16ROUND_H
#define KD_F16ROUND_H

/* kd_round_through_f16 rounds f32 q to binary16 (round to nearest, ties to
 * even; overflow to +-inf) and back to f32, which is exact. The result
 * orders and compares like the binary16 value. On the device a NaN comes
 * back as cvt.rn.f16.f32 makes it; under host emulation (g++ _Float16) it
 * keeps its sign. */
__device__ __forceinline__ float kd_round_through_f16(float q)
{
#ifdef __CUDA_ARCH__
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(q));
    asm("cvt.f32.f16 %0, %1;" : "=f"(q) : "h"(h));
    return q;
#else
    return static_cast<float>(static_cast<_Float16>(q)); /* host emulation */
#endif
}

#endif /* KD_F16ROUND_H */
