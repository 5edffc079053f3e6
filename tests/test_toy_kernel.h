/* test_toy_kernel.h: a small CUDA/HIP kernel for the offline compile tests (test_nvrtc,
 * test_hiprtc): N (a -D define) floats per thread staged through shared memory, so that a
 * larger N shows up in the compiler's register and shared-memory report. */
#ifndef FABENCH_TEST_TOY_KERNEL_H
#define FABENCH_TEST_TOY_KERNEL_H

static const char *const kernel_src =
    "extern \"C\" __global__ void scale(float *out, const float *in, int n)\n"
    "{\n"
    "    __shared__ float tile[256 * N];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float acc[N];\n"
    "    for (int j = 0; j < N; j++) acc[j] = i < n ? in[i] * (float)(j + 1) : 0.0f;\n"
    "    for (int j = 0; j < N; j++) tile[threadIdx.x * N + j] = acc[j];\n"
    "    __syncthreads();\n"
    "    float s = 0.0f;\n"
    "    for (int j = 0; j < N; j++) s += tile[((threadIdx.x + 1) % blockDim.x) * N + j];\n"
    "    if (i < n) out[i] = s;\n"
    "}\n";

#endif
