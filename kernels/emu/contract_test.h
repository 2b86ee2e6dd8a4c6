/* contract_test.h: the pieces every kernel's *_emu_test.cu shares when it
 * checks a kernel run on kernels/emu/host_emu.h against its contract in
 * docs/contracts/: a failure counter with a printf-style check, f32 bit
 * casts, and the e4m3fn decode the FP8 stores are written against.
 *
 * Include after host_emu.h and the kernel; each test is one translation
 * unit, so the counter is that test's own. */
#ifndef KD_EMU_CONTRACT_TEST_H
#define KD_EMU_CONTRACT_TEST_H

#include <bit>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace kd_contract_test {

/* Failed checks so far; the test exits 1 when it is not 0. */
inline int g_failed = 0;

/* expect counts a failed check and prints "FAIL <message>" for the first
 * 20 (the rest are counted, not printed). */
inline void expect(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
inline void expect(bool ok, const char *fmt, ...)
{
    if (ok) return;
    ++g_failed;
    if (g_failed > 20) return;
    va_list ap;
    va_start(ap, fmt);
    std::printf("FAIL ");
    std::vprintf(fmt, ap);
    std::printf("\n");
    va_end(ap);
}

/* f_of is the f32 whose bits are u; u_of the bits of f. */
inline float f_of(uint32_t u) { return std::bit_cast<float>(u); }
inline uint32_t u_of(float f) { return std::bit_cast<uint32_t>(f); }

/* e4m3fn value of a code (OCP OFP8: bias 7, subnormals m * 2^-9, 0x7F and
 * 0xFF NaN). */
inline double e4m3_value(uint8_t c)
{
    const int e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) return NAN;
    const double mag = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
    return (c & 0x80) ? -mag : mag;
}

} /* namespace kd_contract_test */

#endif
