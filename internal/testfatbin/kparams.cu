// Test kernels for cuda.ImageParams: parameter lists whose offsets, sizes
// and alignment padding differ. Built by internal/testfatbin/make-kparams.
struct s20 { char c[20]; };          // 20 bytes, align 1
struct s24 { double d; int i[4]; };  // 24 bytes, align 8

extern "C" __global__ void kp_none() {}
extern "C" __global__ void kp_scalars(const float *p, int n, char c, double d, short h) {
    if (n == 0) ((float *)p)[0] = (float)(c + d + h);
}
extern "C" __global__ void kp_structs(int a, s24 b, s20 c, long long e) {
    if (a == 0) ((long long *)e)[0] = (long long)(b.d + b.i[3] + c.c[19]);
}
