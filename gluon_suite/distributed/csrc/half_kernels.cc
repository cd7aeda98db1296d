// Decompression of float16 payloads, built into the same library as comm_kernels.cc: the
// half-precision values widened and added into a float32 target in one pass, with no float32
// temporary. CPU, OpenMP across elements in fixed chunks, so every result is the same whatever
// the number of threads.
//
//   gs_fp16_add(t, h; alpha, assign)  -> t + alpha * each row of h widened to float32, rows (of n
//                                values: one per worker) added one after another; h is float16
//                                (rows * n); assign=1 writes the first row (t = alpha * row 0, t's
//                                values unread) and adds the others: a dense payload decoded in
//                                one pass
//
// alpha * x is rounded to float32 before the addition (no fused multiply-add), as MXNet's
// `t += alpha * h.astype("float32")` does, so the compiled and the generic path agree bit for bit.
// Called with t as its output (MXNet's out=); given another output array it copies t into it first.
#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

#include "kernel_common.h"


namespace {


// float16 bits -> float32, exactly (every float16 is a float32): normal numbers rebias the
// exponent, subnormals are scaled from their integer mantissa, inf and NaN keep their payload.
inline float FromHalf(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1fu) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  } else {
    const float f = static_cast<float>(man) * (1.0f / 16777216.0f);   // man * 2^-24
    std::memcpy(&u, &f, 4);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void AddRow(float* t, const uint16_t* h, int64_t n, float alpha, bool write) {
  if (write) {
    for (int64_t i = 0; i < n; ++i) t[i] = alpha == 1.f ? FromHalf(h[i]) : alpha * FromHalf(h[i]);
  } else if (alpha == 1.f) {
    for (int64_t i = 0; i < n; ++i) t[i] += FromHalf(h[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) t[i] += alpha * FromHalf(h[i]);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void AddRowF16C(float* t, const uint16_t* h, int64_t n, float alpha,
                                                    bool write) {
  const __m256 a = _mm256_set1_ps(alpha);
  const bool one = alpha == 1.f;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    if (!one) x = _mm256_mul_ps(a, x);
    _mm256_storeu_ps(t + i, write ? x : _mm256_add_ps(_mm256_loadu_ps(t + i), x));
  }
  AddRow(t + i, h + i, n - i, alpha, write);
}
bool HasF16C() {
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}
#else
void AddRowF16C(float* t, const uint16_t* h, int64_t n, float alpha, bool write) {
  AddRow(t, h, n, alpha, write);
}
bool HasF16C() { return false; }
#endif

MXReturnValue Fp16AddForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                             const OpResource& res) {
  const int64_t n = Numel(in->at(0));
  const int64_t rows = n ? Numel(in->at(1)) / n : 0;
  const float alpha = GetFloat(attrs, "alpha", 1.f);
  const bool f16c = HasF16C() && Get(attrs, "f16c", "1") == "1";   // f16c=0: the portable code
  const bool assign = Get(attrs, "assign", "0") == "1";
  float* t = static_cast<float*>(out->at(0).data_ptr);
  if (!assign && in->at(0).data_ptr != out->at(0).data_ptr) std::memcpy(t, in->at(0).data_ptr, n * 4);
  const uint16_t* h = static_cast<const uint16_t*>(in->at(1).data_ptr);
  const int64_t C = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const int64_t begin = c * kChunk, len = std::min(n, (c + 1) * kChunk) - begin;
    for (int64_t w = 0; w < rows; ++w) {   // row after row, as one add per worker would
      if (f16c) {
        AddRowF16C(t + begin, h + w * n + begin, len, alpha, assign && w == 0);
      } else {
        AddRow(t + begin, h + w * n + begin, len, alpha, assign && w == 0);
      }
    }
  }
  return MX_SUCCESS;
}

MXReturnValue ParseAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue InferType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  if (in->at(0) != mxnet::ext::kFloat32 || in->at(1) != mxnet::ext::kFloat16) {
    MX_ERROR_MSG << "gs_fp16_add: the target must be float32 and the payload float16";
    return MX_FAIL;
  }
  out->at(0) = mxnet::ext::kFloat32;
  return MX_SUCCESS;
}

MXReturnValue InferShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  const int64_t n = Numel(in->at(0)), m = Numel(in->at(1));
  if (n * 4 > kMaxBytes) {
    MX_ERROR_MSG << "gs_fp16_add: a buffer of " << n * 4 << " bytes is larger than 2^31 bytes";
    return MX_FAIL;
  }
  if (n == 0 || m % n) {
    MX_ERROR_MSG << "gs_fp16_add: " << m << " float16 values are not rows of " << n;
    return MX_FAIL;
  }
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

}  // namespace

REGISTER_OP(gs_fp16_add)
    .setForward(Fp16AddForward, "cpu")
    .setParseAttrs(ParseAttrs)
    .setInferType(InferType)
    .setInferShape(InferShape);
