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

// bits of v[begin*8 ..) for the bytes [begin, end) of a buffer of n values, and their magnitudes
inline double PackRange(const float* v, int64_t n, int64_t begin, int64_t end, uint8_t* bits) {
  const int64_t whole = std::min<int64_t>(end, n / 8);
  double s = whole > begin ? PackBytes(v + begin * 8, whole - begin, bits + begin) : 0.0;
  if (whole < end) s += PackTail(v + whole * 8, static_cast<int>(n - whole * 8), bits + whole);
  return s;
}

}  // namespace gs_sign

#endif  // GLUON_SUITE_SIGN_BITS_H_
