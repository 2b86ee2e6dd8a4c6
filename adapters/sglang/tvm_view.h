/* tvm_view.h: what the SGLang adapters of this folder share. SGLang's JIT
 * kernels take tvm-ffi TensorViews (DLPack DLTensors) and check them in
 * their host entries (TensorMatcher: shapes, strides, dtypes, device), then
 * launch on tvm-ffi's current stream; an adapter builds those views over
 * the device pointers of the contract's parameter struct, makes its
 * stream the current one, and turns a failed check (a C++ exception) into
 * an error return. Header-only; used by the adapters and by
 * kernels/emu/sglang/topk_v1_emu.cu. */
#ifndef KD_SGLANG_TVM_VIEW_H
#define KD_SGLANG_TVM_VIEW_H

#include <sgl_kernel/tensor.h>

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>

#if !defined(__CUDACC__) && !defined(__HIPCC__)
/* sgl_kernel/tensor.h gives the DLPack dtype of fp16_t and bf16_t (what
 * TensorMatcher::with_dtype<bf16_t> checks against) only under nvcc or
 * hipcc; the CPU emulator compiles with g++. The same two
 * specialisations, as the header spells them for nvcc. */
template <>
struct sglang::host::details::DLDataTypeTrait<sglang::fp16_t> {
    inline static constexpr DLDataType value = {.code = DLDataTypeCode::kDLFloat, .bits = 16, .lanes = 1};
};
template <>
struct sglang::host::details::DLDataTypeTrait<sglang::bf16_t> {
    inline static constexpr DLDataType value = {.code = DLDataTypeCode::kDLBfloat, .bits = 16, .lanes = 1};
};
#endif

namespace kd_sglang {

inline constexpr DLDataType kF32{kDLFloat, 32, 1};
inline constexpr DLDataType kBF16{kDLBfloat, 16, 1};
inline constexpr DLDataType kI32{kDLInt, 32, 1};
inline constexpr DLDataType kI64{kDLInt, 64, 1};
inline constexpr DLDataType kU8{kDLUInt, 8, 1};

/* View is a 1-D or 2-D DLTensor over device memory (CUDA device 0, as the
 * kernels' checks want); a 2-D view's row stride defaults to its width. */
struct View {
    DLTensor t{};
    int64_t shape[2]{};
    int64_t strides[2]{};
    View(const void *data, DLDataType dt, std::initializer_list<int64_t> dims, int64_t row_stride = 0)
    {
        int nd = 0;
        for (int64_t d : dims) shape[nd++] = d;
        t.data = const_cast<void *>(data);
        t.device = DLDevice{kDLCUDA, 0};
        t.ndim = nd;
        t.dtype = dt;
        t.shape = shape;
        if (nd == 2) {
            strides[0] = row_stride ? row_stride : shape[1];
            strides[1] = 1;
        } else {
            strides[0] = 1;
        }
        t.strides = strides;
    }
    tvm::ffi::TensorView view() { return tvm::ffi::TensorView(&t); }
};

/* call runs f (a kernel's host entry) with stream as tvm-ffi's current
 * CUDA stream of device 0, and returns 0, the launch's error
 * (cudaGetLastError), or cudaErrorInvalidValue when f throws (a
 * TensorMatcher or RuntimeCheck refusal; its message goes to stderr,
 * prefixed with what). */
template <class F>
int call(const char *what, cudaStream_t stream, F &&f)
{
    TVMFFIStreamHandle prev = nullptr;
    if (TVMFFIEnvSetStream(kDLCUDA, 0, stream, &prev) != 0) return cudaErrorInvalidValue;
    int rc = 0;
    try {
        f();
        rc = cudaGetLastError();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", what, e.what());
        rc = cudaErrorInvalidValue;
    }
    TVMFFIEnvSetStream(kDLCUDA, 0, prev, nullptr);
    return rc;
}

} /* namespace kd_sglang */

#endif /* KD_SGLANG_TVM_VIEW_H */
