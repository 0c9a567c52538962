// Hand-written CUDA of three kernels of benchmarks/particles_kernels.py (forward only), for
// benchmarks/gpu_registers.py: what a person writing CUDA by hand gets from the same compiler.
// Arrays of vec3 are float[3 * n]; one thread per element, a grid-stride loop as simkit's and
// Warp's kernels have.

extern "C" __global__ void eval_springs(const float* __restrict__ x, const float* __restrict__ v,
                                        const int* __restrict__ indices, const float* __restrict__ rest,
                                        float ke, float kd, float* f, long long n)
{
    for (long long s = blockIdx.x * (long long)blockDim.x + threadIdx.x; s < n; s += (long long)gridDim.x * blockDim.x) {
        const int i = indices[2 * s], j = indices[2 * s + 1];
        const float dx = x[3 * i] - x[3 * j], dy = x[3 * i + 1] - x[3 * j + 1], dz = x[3 * i + 2] - x[3 * j + 2];
        const float len = sqrtf(dx * dx + dy * dy + dz * dz);
        if (len < 1.0e-9f)
            continue;
        const float ux = dx / len, uy = dy / len, uz = dz / len;
        const float dv = ux * (v[3 * i] - v[3 * j]) + uy * (v[3 * i + 1] - v[3 * j + 1]) + uz * (v[3 * i + 2] - v[3 * j + 2]);
        const float c = ke * (len - rest[s]) + kd * dv;
        atomicAdd(&f[3 * i], -ux * c); atomicAdd(&f[3 * i + 1], -uy * c); atomicAdd(&f[3 * i + 2], -uz * c);
        atomicAdd(&f[3 * j], ux * c); atomicAdd(&f[3 * j + 1], uy * c); atomicAdd(&f[3 * j + 2], uz * c);
    }
}

extern "C" __global__ void integrate(const float* __restrict__ x, const float* __restrict__ v,
                                     const float* __restrict__ f, const float* __restrict__ inv_mass,
                                     float gx, float gy, float gz, float dt, float* __restrict__ x_out,
                                     float* __restrict__ v_out, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float w = inv_mass[i];
        const float g = -w < 0.0f ? 1.0f : 0.0f;  // wp.step(-w)
        const float vx = v[3 * i] + (f[3 * i] * w + gx * g) * dt;
        const float vy = v[3 * i + 1] + (f[3 * i + 1] * w + gy * g) * dt;
        const float vz = v[3 * i + 2] + (f[3 * i + 2] * w + gz * g) * dt;
        v_out[3 * i] = vx; v_out[3 * i + 1] = vy; v_out[3 * i + 2] = vz;
        x_out[3 * i] = x[3 * i] + vx * dt; x_out[3 * i + 1] = x[3 * i + 1] + vy * dt;
        x_out[3 * i + 2] = x[3 * i + 2] + vz * dt;
    }
}

extern "C" __global__ void weighted_sum(const float* __restrict__ x, float* loss, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(loss, 0.3f * x[3 * i] + x[3 * i + 1] - 0.2f * x[3 * i + 2]);
}
