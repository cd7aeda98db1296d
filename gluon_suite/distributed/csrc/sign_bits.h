// Signs and magnitudes of a run of values, eight to a byte, shared by gs_sign_pack and gs_ef_sign
// so that both give the same bits and the same scale. A bit is set when its value is >= 0 (-0
// included, NaN not), the first value of a byte its most significant bit. The magnitudes are
// summed in four lanes: lane j adds |v_j| + |v_j+4| of each byte (one float addition) into a
// double; the lanes are combined as (l0 + l1) + (l2 + l3). With SSE2 (every x86-64) the bytes come
// from the compare masks; elsewhere the same arithmetic is written out.
#ifndef GLUON_SUITE_SIGN_BITS_H_
#define GLUON_SUITE_SIGN_BITS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gs_sign {

// a byte's bits in the opposite order
inline const uint8_t* Reversed() {
  static const uint8_t* table = [] {
    uint8_t* t = new uint8_t[256];
    for (int b = 0; b < 256; ++b) {
      int r = 0;
      for (int j = 0; j < 8; ++j) r |= ((b >> j) & 1) << (7 - j);
      t[b] = static_cast<uint8_t>(r);
    }
    return t;
  }();
  return table;
}

// bits[0 .. m) for the first 8 m values of p (m whole bytes), and the sum of their magnitudes
inline double PackBytes(const float* p, int64_t m, uint8_t* bits) {
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
#if defined(__SSE2__)
  const uint8_t* rev = Reversed();
  const __m128 zero = _mm_setzero_ps();
  const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  __m128d a01 = _mm_setzero_pd(), a23 = _mm_setzero_pd();
  for (int64_t b = 0; b < m; ++b) {
    const __m128 lo = _mm_loadu_ps(p + 8 * b), hi = _mm_loadu_ps(p + 8 * b + 4);
    const int mask = _mm_movemask_ps(_mm_cmpge_ps(lo, zero)) | (_mm_movemask_ps(_mm_cmpge_ps(hi, zero)) << 4);
    bits[b] = rev[mask];
    const __m128 s = _mm_add_ps(_mm_and_ps(lo, magnitude), _mm_and_ps(hi, magnitude));
    a01 = _mm_add_pd(a01, _mm_cvtps_pd(s));
    a23 = _mm_add_pd(a23, _mm_cvtps_pd(_mm_movehl_ps(s, s)));
  }
  _mm_storeu_pd(lane, a01);
  _mm_storeu_pd(lane + 2, a23);
#else
  for (int64_t b = 0; b < m; ++b) {
    const float* q = p + 8 * b;
    unsigned byte = 0;
    for (int j = 0; j < 8; ++j) byte |= static_cast<unsigned>(q[j] >= 0.f) << (7 - j);
    bits[b] = static_cast<uint8_t>(byte);
    for (int j = 0; j < 4; ++j) lane[j] += static_cast<double>(std::fabs(q[j]) + std::fabs(q[j + 4]));
  }
#endif
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

// the last, partial byte: its first r (< 8) values, by the same rule (absent values add nothing)
inline double PackTail(const float* p, int r, uint8_t* bits) {
  unsigned byte = 0;
  double lane[4] = {0.0, 0.0, 0.0, 0.0};
  for (int j = 0; j < r; ++j) byte |= static_cast<unsigned>(p[j] >= 0.f) << (7 - j);
  for (int j = 0; j < 4; ++j) {
    const float a = j < r ? std::fabs(p[j]) : 0.f, b = j + 4 < r ? std::fabs(p[j + 4]) : 0.f;
    lane[j] = static_cast<double>(a + b);
  }
  *bits = static_cast<uint8_t>(byte);
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

#if defined(__x86_64__)
// (GCC 12 warns that the intrinsics' own undefined registers "may be used uninitialized")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// PackBytes two bytes (sixteen values) at a time with AVX-512, the same bits and the same sums:
// the four lanes sit in one register of doubles and take each byte's four sums in byte order.
__attribute__((target("avx512f"))) inline double PackBytesAVX512(const float* p, int64_t m, uint8_t* bits) {
  const uint8_t* rev = Reversed();
  __m256d acc = _mm256_setzero_pd();
  int64_t b = 0;
  for (; b + 2 <= m; b += 2) {
    const __m512 x = _mm512_loadu_ps(p + 8 * b);
    const __mmask16 ge = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);   // NaN: 0
    bits[b] = rev[ge & 0xff];
    bits[b + 1] = rev[(ge >> 8) & 0xff];
    const __m512 a = _mm512_abs_ps(x);
    // 128-bit lane 0: |v_j| + |v_j+4| of byte b; lane 2: the same of byte b + 1
    const __m512 s = _mm512_add_ps(a, _mm512_shuffle_f32x4(a, a, _MM_SHUFFLE(3, 3, 1, 1)));
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm512_castps512_ps128(s)));
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm512_extractf32x4_ps(s, 2)));
  }
  double lane[4];
  _mm256_storeu_pd(lane, acc);
  for (; b < m; ++b) {   // an odd last byte
    const float* q = p + 8 * b;
    unsigned byte = 0;
    for (int j = 0; j < 8; ++j) byte |= static_cast<unsigned>(q[j] >= 0.f) << (7 - j);
    bits[b] = static_cast<uint8_t>(byte);
    for (int j = 0; j < 4; ++j) lane[j] += static_cast<double>(std::fabs(q[j]) + std::fabs(q[j + 4]));
  }
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}
#pragma GCC diagnostic pop

#else
inline double PackBytesAVX512(const float* p, int64_t m, uint8_t* bits) { return PackBytes(p, m, bits); }
#endif

// bits of v[begin*8 ..) for the bytes [begin, end) of a buffer of n values, and their magnitudes;
// simd: with AVX-512 (the same result)
inline double PackRange(const float* v, int64_t n, int64_t begin, int64_t end, uint8_t* bits, bool simd = false) {
  const int64_t whole = std::min<int64_t>(end, n / 8);
  double s = 0.0;
  if (whole > begin)
    s = simd ? PackBytesAVX512(v + begin * 8, whole - begin, bits + begin) : PackBytes(v + begin * 8, whole - begin, bits + begin);
  if (whole < end) s += PackTail(v + whole * 8, static_cast<int>(n - whole * 8), bits + whole);
  return s;
}

}  // namespace gs_sign

#endif  // GLUON_SUITE_SIGN_BITS_H_
