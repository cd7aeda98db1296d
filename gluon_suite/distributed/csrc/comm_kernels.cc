// Compression kernels of gluon_suite.distributed as MXNet library operators: CPU, float32 data,
// OpenMP across elements, each working on one flat buffer (a bucket's vector). Work is split into
// fixed chunks whose boundaries depend only on the buffer's length, and partial results are
// combined in chunk order, so every result is the same whatever the number of threads.
//
//   gs_topk(x; k, index, sampled)     -> values (k), indices (k): the k largest |x|, by selection
//                                        (sampled=0: never the sampled bound, for tests)
//   gs_ef_topk(g, r; k, index, gradient) -> values, indices, r' (out=r: in place): v = g + r
//                                        (v = r with gradient=0, g then a placeholder), top-k of
//                                        v, r' = v with the selected entries zeroed
//   gs_sign_pack(x)                   -> bits (ceil(n/8) uint8), scale (1): bit = x >= 0, most
//                                        significant first; scale = mean |x| (sign_bits.h)
//   gs_sign_unpack_add(t, bits, s; n, alpha) -> t + alpha * sum_w s_w * (+-1 of row w's bits)
//   gs_cast_fp16(x; f16c)             -> y (float16), finite (1): 1 when every y is finite
//                                        (f16c=0: never the F16C instructions, for tests)
//   gs_scatter_add(t, vals, idx; alpha, segments) -> t with t[idx] += alpha * vals; indices are
//                                        distinct within each of `segments` equal parts
//   gs_block_gather(x, blocks; total) -> the blocks' elements, block after block
//   gs_block_add(t, vals, blocks; alpha) -> t with each block += alpha * its part of vals
//     blocks: (m, 4) int32/int64 rows (origin, rows, row length, row stride) in x's flat order
//
// Top-k tie rule: an element is selected when its magnitude is above the k-th largest magnitude,
// and of the elements equal to it the ones with the lowest indices are taken (-0 equals +0; NaN
// ranks above +inf). Indices come out in ascending order, values beside them.
//
// Operators whose output replaces an input (ef's r', the adds' t) are called with that input as
// their output (MXNet's out=); given another output array they copy the input into it first.
#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_common.h"
#include "sign_bits.h"


namespace {

const int64_t kSmall = 1 << 15;               // top-k below this size: one thread, nth_element

// |x| as an ordered integer: for non-negative floats the bit patterns order as the values do
inline uint32_t Key(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u & 0x7fffffffu;
}

// ---------------------------------------------------------------------------------------------
// Top-k selection: the k-th largest key T, and how many of the keys equal to T are taken (the
// first ones in index order). Large buffers: SampledSelect (below) when its sample holds, else two
// radix passes (the high 15 bits of the key, then
// the low 16 bits within the bin holding the k-th largest), each a parallel histogram.

struct Threshold {
  uint32_t key = 0;
  int64_t ties = 0;
};

// Histogram of key >> shift (bins entries) over x, counting only keys whose high bits equal
// `high` when shift == 0 (the second pass).
void Histogram(const float* x, int64_t n, int shift, int64_t bins, int64_t high, std::vector<int64_t>* hist) {
  hist->assign(bins, 0);
#pragma omp parallel
  {
    std::vector<uint32_t> local(bins, 0);
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t k = Key(x[i]);
      if (shift) {
        ++local[k >> shift];
      } else if (static_cast<int64_t>(k >> 16) == high) {
        ++local[k & 0xffffu];
      }
    }
#pragma omp critical
    for (int64_t b = 0; b < bins; ++b) (*hist)[b] += local[b];
  }
}

// The bin holding the `want`-th largest (1-based) of a histogram, and how many lie above it.
void FindBin(const std::vector<int64_t>& hist, int64_t want, int64_t* bin, int64_t* above) {
  int64_t acc = 0;
  for (int64_t b = static_cast<int64_t>(hist.size()) - 1; b >= 0; --b) {
    if (acc + hist[b] >= want) {
      *bin = b, *above = acc;
      return;
    }
    acc += hist[b];
  }
  *bin = 0, *above = acc;
}

Threshold Select(const float* x, int64_t n, int64_t k) {
  Threshold t;
  if (k <= 0 || n <= 0) return t;
  if (n < kSmall) {
    std::vector<uint32_t> keys(n);
    for (int64_t i = 0; i < n; ++i) keys[i] = Key(x[i]);
    std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(), std::greater<uint32_t>());
    t.key = keys[k - 1];
    int64_t above = 0;
    for (int64_t i = 0; i < n; ++i) above += Key(x[i]) > t.key;
    t.ties = k - above;
    return t;
  }
  std::vector<int64_t> hist;
  int64_t high, above_high, low, above_low;
  Histogram(x, n, 16, int64_t(1) << 15, 0, &hist);
  FindBin(hist, k, &high, &above_high);
  Histogram(x, n, 0, int64_t(1) << 16, high, &hist);
  FindBin(hist, k - above_high, &low, &above_low);
  t.key = static_cast<uint32_t>((high << 16) | low);
  t.ties = k - above_high - above_low;
  return t;
}

// Writes the selected elements (ascending index) into vals/idx; with `zero`, sets them to 0 in x.
template <typename I>
void Gather(float* x, int64_t n, const Threshold& t, int64_t k, bool zero, float* vals, I* idx) {
  if (k <= 0) return;
  const int64_t C = Chunks(n);
  std::vector<int64_t> above(C, 0), equal(C, 0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    int64_t a = 0, e = 0;
    for (int64_t i = c * kChunk, end = std::min(n, (c + 1) * kChunk); i < end; ++i) {
      const uint32_t key = Key(x[i]);
      a += key > t.key;
      e += key == t.key;
    }
    above[c] = a, equal[c] = e;
  }
  std::vector<int64_t> start(C), ties(C);
  int64_t pos = 0, left = t.ties;
  for (int64_t c = 0; c < C; ++c) {
    ties[c] = std::min(left, equal[c]);
    left -= ties[c];
    start[c] = pos;
    pos += above[c] + ties[c];
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    if (above[c] + ties[c] == 0) continue;
    int64_t p = start[c], tie = ties[c];
    for (int64_t i = c * kChunk, end = std::min(n, (c + 1) * kChunk); i < end; ++i) {
      const uint32_t key = Key(x[i]);
      if (key > t.key || (key == t.key && tie > 0)) {
        tie -= key == t.key;
        vals[p] = x[i];
        idx[p++] = static_cast<I>(i);
        if (zero) x[i] = 0.f;
      }
    }
  }
}

// Large buffers, first try: a strided sample of 2^16 keys gives a bound lo that a little more
// than k keys reach (the sample's rank k S / n plus four standard deviations); one parallel pass
// collects the index of every key >= lo, in index order, and the k-th largest key is selected
// among those candidates, which hold every key at or above it. False (the histogram passes and
// Gather run instead) when fewer than k keys reach lo or more than twice the expected number do
// (many ties, a sample unlike the buffer): the result never depends on the sample, only the time.
// The k-th largest (1-based) of keys, by two radix passes (high 16 bits, then the low 16 within
// that bin), and how many keys lie above it.
Threshold RadixSelect(const std::vector<uint32_t>& keys, int64_t k) {
  std::vector<int64_t> hist(int64_t(1) << 16, 0);
  for (const uint32_t key : keys) ++hist[key >> 16];
  int64_t high, above_high, low, above_low;
  FindBin(hist, k, &high, &above_high);
  std::fill(hist.begin(), hist.end(), 0);
  for (const uint32_t key : keys)
    if (static_cast<int64_t>(key >> 16) == high) ++hist[key & 0xffffu];
  FindBin(hist, k - above_high, &low, &above_low);
  Threshold t;
  t.key = static_cast<uint32_t>((high << 16) | low);
  t.ties = k - above_high - above_low;
  return t;
}

// One chunk's candidates: the positions (from the chunk's start) and values of the keys >= lo, in
// index order, written without a branch (at and av hold len + 16 entries). With g, the values are
// v = g + x, written into v as they are made (error feedback's sum and its selection in one pass).
int64_t CollectPortable(const float* g, const float* x, float* v, int64_t len, uint32_t lo, uint32_t* at,
                        float* av) {
  int64_t m = 0;
  for (int64_t i = 0; i < len; ++i) {
    const float y = g ? g[i] + x[i] : x[i];
    if (g) v[i] = y;
    at[m] = static_cast<uint32_t>(i);
    av[m] = y;
    m += Key(y) >= lo;
  }
  return m;
}

#if defined(__x86_64__)
// The same sixteen at a time with AVX-512: the selected positions and values are compressed into
// registers and stored whole (compressing straight to memory is slow on some processors), so the
// next store overwrites what lies past the m-th entry.
__attribute__((target("avx512f,popcnt"))) int64_t CollectAVX512(const float* g, const float* x, float* v,
                                                               int64_t len, uint32_t lo, uint32_t* at,
                                                               float* av) {
  const __m512i mag = _mm512_set1_epi32(0x7fffffff), bound = _mm512_set1_epi32(static_cast<int>(lo));
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t m = 0, i = 0;
  for (; i + 16 <= len; i += 16) {
    __m512 y = _mm512_loadu_ps(x + i);
    if (g) {
      y = _mm512_add_ps(_mm512_loadu_ps(g + i), y);
      _mm512_storeu_ps(v + i, y);
    }
    const __m512i key = _mm512_and_si512(_mm512_castps_si512(y), mag);
    const __mmask16 sel = _mm512_cmp_epu32_mask(key, bound, _MM_CMPINT_NLT);
    _mm512_storeu_si512(at + m, _mm512_maskz_compress_epi32(sel, pos));
    _mm512_storeu_ps(av + m, _mm512_maskz_compress_ps(sel, y));
    m += _mm_popcnt_u32(static_cast<unsigned>(sel));
    pos = _mm512_add_epi32(pos, sixteen);
  }
  const int64_t tail = CollectPortable(g ? g + i : nullptr, x + i, v + i, len - i, lo, at + m, av + m);
  for (int64_t j = m; j < m + tail; ++j) at[j] += static_cast<uint32_t>(i);
  return m + tail;
}
#else
int64_t CollectAVX512(const float* g, const float* x, float* v, int64_t len, uint32_t lo, uint32_t* at,
                      float* av) {
  return CollectPortable(g, x, v, len, lo, at, av);
}
#endif

// The candidates SampledSelect keeps: ascending indices and their values (so that the selection
// and the output never read the buffer again at scattered places).
struct Candidates {
  std::vector<int64_t> index;
  std::vector<float> value;
};

// x: the buffer; with g (error feedback), the buffer is v = g + x, computed in the candidates'
// pass and written to v (which may be x itself), and *written says whether that pass ran (else
// the caller computes v). The sample reads g + x at its positions, the same floats as the pass.
bool SampledSelect(const float* g, const float* x, float* v, int64_t n, int64_t k, bool simd, Threshold* t,
                   Candidates* cand, bool* written) {
  *written = false;
  const int64_t S = std::min<int64_t>(n, int64_t(1) << 16), stride = n / S;
  const double expect = static_cast<double>(S) * static_cast<double>(k) / static_cast<double>(n);
  const int64_t q = static_cast<int64_t>(std::ceil(expect + 4.0 * std::sqrt(expect) + 8.0));
  if (k <= 0 || q >= S) return false;
  std::vector<uint32_t> s(S);
  for (int64_t j = 0; j < S; ++j) s[j] = Key(g ? g[j * stride] + x[j * stride] : x[j * stride]);
  std::nth_element(s.begin(), s.begin() + (q - 1), s.end(), std::greater<uint32_t>());
  const uint32_t lo = s[q - 1];
  const int64_t cap = 2 * (q * (n / S + 1)) + 4096;
  const int64_t C = Chunks(n);
  std::vector<std::vector<int64_t>> part(C);
  std::vector<std::vector<float>> pval(C);
  int64_t total = 0;
#pragma omp parallel reduction(+ : total)
  {
    std::vector<uint32_t> at(kChunk + 16);
    std::vector<float> av(kChunk + 16);
#pragma omp for schedule(static)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t begin = c * kChunk, len = std::min(n, (c + 1) * kChunk) - begin;
      const float* gc = g ? g + begin : nullptr;
      const int64_t m = simd ? CollectAVX512(gc, x + begin, v + begin, len, lo, at.data(), av.data())
                             : CollectPortable(gc, x + begin, v + begin, len, lo, at.data(), av.data());
      part[c].resize(m);
      for (int64_t j = 0; j < m; ++j) part[c][j] = begin + at[j];
      pval[c].assign(av.begin(), av.begin() + m);
      total += m;
    }
  }
  *written = g != nullptr;
  if (total < k || total > cap) return false;
  cand->index.clear();
  cand->index.reserve(total);
  cand->value.clear();
  cand->value.reserve(total);
  for (int64_t c = 0; c < C; ++c) {
    cand->index.insert(cand->index.end(), part[c].begin(), part[c].end());
    cand->value.insert(cand->value.end(), pval[c].begin(), pval[c].end());
  }
  std::vector<uint32_t> keys(total);
  for (int64_t j = 0; j < total; ++j) keys[j] = Key(cand->value[j]);
  *t = RadixSelect(keys, k);
  return true;
}

// Gather's output from the candidates of SampledSelect, by the same rule; with `zero`, the
// selected entries of x are set to 0.
template <typename I>
void GatherCandidates(float* x, const Candidates& cand, const Threshold& t, bool zero, float* vals, I* idx) {
  int64_t p = 0, tie = t.ties;
  for (size_t j = 0; j < cand.index.size(); ++j) {
    const float y = cand.value[j];
    const uint32_t key = Key(y);
    if (key > t.key || (key == t.key && tie > 0)) {
      const int64_t i = cand.index[j];
      tie -= key == t.key;
      vals[p] = y;
      idx[p++] = static_cast<I>(i);
      if (zero) x[i] = 0.f;
    }
  }
}

int64_t TopkK(const Attrs& attrs) { return GetInt(attrs, "k", 0); }

bool IndexType(const Attrs& attrs, int* type) {
  const std::string s = Get(attrs, "index", "int32");
  if (s == "int32") *type = mxnet::ext::kInt32;
  else if (s == "int64") *type = mxnet::ext::kInt64;
  else
    return false;
  return true;
}

// out[0] <- in[i] unless they are one buffer (called with out=input). Attribute simd=0 keeps to
// the portable candidate pass where the processor has AVX-512 (for tests: the same result).
MXReturnValue TopkForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                          const OpResource& res) {
  const bool ef = in->size() == 2;
  const MXTensor& x = in->at(ef ? 1 : 0);
  const int64_t n = Numel(x), k = TopkK(attrs);
  if (TooLarge(n, 4, ef ? "gs_ef_topk" : "gs_topk")) return MX_FAIL;
  const bool simd = HasAVX512() && Get(attrs, "simd", "1") == "1";
  // error feedback: v = g + r (or r itself without a gradient), written into r's output (r itself
  // with out=r); with a gradient the sum is made in the candidates' pass when that pass runs
  const float* g = nullptr;
  float* v;
  if (ef) {
    v = Data<float>(out->at(2));
    if (Get(attrs, "gradient", "1") == "1") {
      g = Data<float>(in->at(0));
    } else {
      Alias(x, &out->at(2), n * 4);
    }
  } else {
    v = Data<float>(x);   // read only: zero is false below
  }
  float* vals = Data<float>(out->at(0));
  Threshold t;
  Candidates cand;
  bool written = false;
  const bool sampled = n >= kSmall && Get(attrs, "sampled", "1") == "1";
  if (sampled && SampledSelect(g, g ? Data<float>(x) : v, v, n, k, simd, &t, &cand, &written)) {
    if (out->at(1).dtype == mxnet::ext::kInt32)
      GatherCandidates<int32_t>(v, cand, t, ef, vals, Data<int32_t>(out->at(1)));
    else
      GatherCandidates<int64_t>(v, cand, t, ef, vals, Data<int64_t>(out->at(1)));
    return MX_SUCCESS;
  }
  if (g && !written) {
    const float* r = Data<float>(x);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) v[i] = g[i] + r[i];
  }
  t = Select(v, n, k);
  if (out->at(1).dtype == mxnet::ext::kInt32)
    Gather<int32_t>(v, n, t, k, ef, vals, Data<int32_t>(out->at(1)));
  else
    Gather<int64_t>(v, n, t, k, ef, vals, Data<int64_t>(out->at(1)));
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Signs and their scale.

MXReturnValue SignPackForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                              const OpResource& res) {
  const float* x = Data<float>(in->at(0));
  const int64_t n = Numel(in->at(0));
  if (TooLarge(n, 4, "gs_sign_pack")) return MX_FAIL;
  uint8_t* bits = Data<uint8_t>(out->at(0));
  const int64_t bytes = (n + 7) / 8, per = kChunk / 8, C = (bytes + per - 1) / per;
  const bool simd = HasAVX512() && Get(attrs, "simd", "1") == "1";   // simd=0: portable (tests)
  std::vector<double> part(C, 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c)
    part[c] = gs_sign::PackRange(x, n, c * per, std::min(bytes, (c + 1) * per), bits, simd);
  double total = 0.0;
  for (int64_t c = 0; c < C; ++c) total += part[c];
  Data<float>(out->at(1))[0] = n ? static_cast<float>(total / static_cast<double>(n)) : 0.f;
  return MX_SUCCESS;
}

// The eight signs of each byte as +-1.0 (most significant bit first): a table lookup and a
// multiply per eight values instead of a branch per bit.
const float (*SignTable())[8] {
  static const auto* table = [] {
    auto* t = new float[256][8];
    for (int b = 0; b < 256; ++b)
      for (int j = 0; j < 8; ++j) t[b][j] = ((b >> (7 - j)) & 1) ? 1.f : -1.f;
    return t;
  }();
  return table;
}

#if defined(__x86_64__)
// The whole bytes [first, end) two at a time with AVX-512 (sixteen values; each row's two bytes
// make the blend mask of +-s_w), the same sums as the portable loops below: one row adds +-s_0
// straight into t, several are summed from 0 in row order first. Returns the first byte not done.
__attribute__((target("avx512f"))) int64_t UnpackAddAVX512(float* t, const uint8_t* bits, const float* scale,
                                                          int64_t rows, int64_t bytes, int64_t first,
                                                          int64_t end) {
  const uint8_t* rev = gs_sign::Reversed();
  int64_t b = first;
  if (rows == 1) {
    const __m512 pos = _mm512_set1_ps(scale[0]), neg = _mm512_set1_ps(-scale[0]);
    for (; b + 2 <= end; b += 2) {
      const __mmask16 m = static_cast<__mmask16>(rev[bits[b]] | (rev[bits[b + 1]] << 8));
      _mm512_storeu_ps(t + 8 * b, _mm512_add_ps(_mm512_loadu_ps(t + 8 * b), _mm512_mask_blend_ps(m, neg, pos)));
    }
    return b;
  }
  for (; b + 2 <= end; b += 2) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t w = 0; w < rows; ++w) {
      const uint8_t* bw = bits + w * bytes + b;
      const __mmask16 m = static_cast<__mmask16>(rev[bw[0]] | (rev[bw[1]] << 8));
      acc = _mm512_add_ps(acc, _mm512_mask_blend_ps(m, _mm512_set1_ps(-scale[w]), _mm512_set1_ps(scale[w])));
    }
    _mm512_storeu_ps(t + 8 * b, _mm512_add_ps(_mm512_loadu_ps(t + 8 * b), acc));
  }
  return b;
}
#else
int64_t UnpackAddAVX512(float* t, const uint8_t* bits, const float* scale, int64_t rows, int64_t bytes,
                        int64_t first, int64_t end) {
  return first;
}
#endif

MXReturnValue SignUnpackAddForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                   const OpResource& res) {
  const int64_t n = Numel(in->at(0)), rows = Numel(in->at(2));
  if (TooLarge(n, 4, "gs_sign_unpack_add")) return MX_FAIL;
  const int64_t bytes = rows ? Numel(in->at(1)) / rows : 0;
  const float alpha = GetFloat(attrs, "alpha", 1.f);
  float* t = Data<float>(out->at(0));
  Alias(in->at(0), &out->at(0), n * 4);
  const uint8_t* bits = Data<uint8_t>(in->at(1));
  std::vector<float> scale(rows);
  for (int64_t w = 0; w < rows; ++w) scale[w] = alpha * Data<float>(in->at(2))[w];
  const int64_t per = kChunk / 8, C = (bytes + per - 1) / per;
  const float(*pm)[8] = SignTable();
  const bool simd = HasAVX512() && Get(attrs, "simd", "1") == "1";   // simd=0: portable (tests)
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const int64_t first = c * per, end = std::min(bytes, (c + 1) * per);
    const int64_t start = simd ? UnpackAddAVX512(t, bits, scale.data(), rows, bytes, first, std::min(end, n / 8))
                               : first;
    const int64_t whole = rows == 1 ? std::max(start, std::min(end, n / 8)) : start;   // one row, eight signs a byte
    for (int64_t b = start; b < whole; ++b) {
      const float* pm0 = pm[bits[b]];
      float* tb = t + b * 8;
      for (int j = 0; j < 8; ++j) tb[j] += scale[0] * pm0[j];
    }
    for (int64_t b = whole; b < end; ++b) {
      const int m = static_cast<int>(std::min<int64_t>(8, n - b * 8));
      float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
      for (int64_t w = 0; w < rows; ++w) {   // +-s_w exactly: the same sums as bit by bit
        const float* pmw = pm[bits[w * bytes + b]];
        for (int j = 0; j < 8; ++j) acc[j] += scale[w] * pmw[j];
      }
      if (m == 8) {
        for (int j = 0; j < 8; ++j) t[b * 8 + j] += acc[j];
      } else {
        for (int j = 0; j < m; ++j) t[b * 8 + j] += acc[j];
      }
    }
  }
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// float32 -> float16, rounding to nearest even, with the finiteness of the result.

inline uint16_t ToHalf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x477ff000u) {                       // >= 65520 rounds to inf; inf and NaN stay so
    return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  }
  if (a < 0x38800000u) {                        // below 2^-14: a float16 subnormal or zero
    // adding 0.5 puts the value's float16 subnormal bits at the bottom of the mantissa, rounded
    // by the addition itself (to nearest even)
    float v;
    std::memcpy(&v, &a, 4);
    v += 0.5f;
    uint32_t r;
    std::memcpy(&r, &v, 4);
    return static_cast<uint16_t>(sign | (r - 0x3f000000u));
  }
  const uint32_t odd = (a >> 13) & 1u;          // round to nearest, ties to the even mantissa
  a += 0xc8000fffu + odd;                       // exponent rebias (-112 << 23) and rounding bias
  return static_cast<uint16_t>(sign | (a >> 13));
}

// The same conversion eight at a time with the F16C instructions (IEEE rounding to nearest even,
// as ToHalf), where the processor has them; the compile flags do not assume them.
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void CastF16C(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = ToHalf(x[i]);
}
bool HasF16C() {
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}
#else
void CastF16C(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ToHalf(x[i]);
}
bool HasF16C() { return false; }
#endif

MXReturnValue CastForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                          const OpResource& res) {
  const float* x = Data<float>(in->at(0));
  const int64_t n = Numel(in->at(0));
  if (TooLarge(n, 4, "gs_cast_fp16")) return MX_FAIL;
  uint16_t* y = reinterpret_cast<uint16_t*>(out->at(0).data_ptr);
  const int64_t C = Chunks(n);
  const bool f16c = HasF16C() && Get(attrs, "f16c", "1") == "1";   // f16c=0: the portable code
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t c = 0; c < C; ++c) {
    const int64_t begin = c * kChunk, end = std::min(n, (c + 1) * kChunk);
    if (f16c) {
      CastF16C(x + begin, y + begin, end - begin);
    } else {
      for (int64_t i = begin; i < end; ++i) y[i] = ToHalf(x[i]);
    }
    unsigned inf = 0;   // the chunk is still in cache: its finiteness costs no memory pass
    for (int64_t i = begin; i < end; ++i) inf |= (y[i] & 0x7c00u) == 0x7c00u;
    bad |= static_cast<int>(inf);
  }
  Data<float>(out->at(1))[0] = bad ? 0.f : 1.f;
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Scatter-add of (value, index) pairs, and the blocks of a bucket.

template <typename I>
MXReturnValue ScatterAddT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  const int64_t n = Numel(in->at(0)), m = Numel(in->at(1));
  if (TooLarge(n, 4, "gs_scatter_add")) return MX_FAIL;
  const int64_t segments = std::max<int64_t>(1, GetInt(attrs, "segments", 1));
  const float alpha = GetFloat(attrs, "alpha", 1.f);
  Alias(in->at(0), &out->at(0), n * 4);
  float* t = Data<float>(out->at(0));
  const float* v = Data<float>(in->at(1));
  const I* idx = Data<I>(in->at(2));
  const int64_t per = m / segments;
  for (int64_t s = 0; s < segments; ++s) {   // within a segment the indices are distinct
#pragma omp parallel for schedule(static) if (per > 4096)
    for (int64_t j = s * per; j < (s + 1) * per; ++j) {
      const int64_t i = static_cast<int64_t>(idx[j]);
      if (i >= 0 && i < n) t[i] += alpha * v[j];
    }
  }
  return MX_SUCCESS;
}

struct Task {
  int64_t src, dst, len;   // a run of len elements: bucket offset src, payload offset dst
};

// The runs of contiguous elements the blocks cover, split to at most kChunk elements each.
template <typename I>
bool Runs(const MXTensor& blocks, int64_t n, int64_t* total, std::vector<Task>* tasks) {
  const int64_t m = blocks.shape.empty() ? 0 : blocks.shape[0];
  const I* b = Data<I>(blocks);
  int64_t dst = 0;
  for (int64_t j = 0; j < m; ++j) {
    const int64_t origin = b[4 * j], rows = b[4 * j + 1], len = b[4 * j + 2], stride = b[4 * j + 3];
    if (rows < 0 || len < 0 || origin < 0 || stride < 0 || (rows > 0 && len > 0 && origin + (rows - 1) * stride + len > n)) {
      MX_ERROR_MSG << "block " << j << " (origin " << origin << ", " << rows << " x " << len << ", stride " << stride
                   << ") reaches past the buffer of " << n << " elements";
      return false;
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < len; o += kChunk) {
        tasks->push_back({origin + r * stride + o, dst, std::min(kChunk, len - o)});
        dst += std::min(kChunk, len - o);
      }
  }
  *total = dst;
  return true;
}

template <typename I>
MXReturnValue BlockGatherT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  const int64_t n = Numel(in->at(0));
  if (TooLarge(n, 4, "gs_block_gather")) return MX_FAIL;
  std::vector<Task> tasks;
  int64_t total = 0;
  if (!Runs<I>(in->at(1), n, &total, &tasks)) return MX_FAIL;
  if (total != Numel(out->at(0))) {
    MX_ERROR_MSG << "gs_block_gather: the blocks hold " << total << " elements, total says " << Numel(out->at(0));
    return MX_FAIL;
  }
  const float* x = Data<float>(in->at(0));
  float* y = Data<float>(out->at(0));
  const int64_t T = static_cast<int64_t>(tasks.size());
#pragma omp parallel for schedule(dynamic, 16) if (total > kChunk)
  for (int64_t j = 0; j < T; ++j) std::memcpy(y + tasks[j].dst, x + tasks[j].src, tasks[j].len * 4);
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue BlockAddT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  const int64_t n = Numel(in->at(0));
  if (TooLarge(n, 4, "gs_block_add")) return MX_FAIL;
  std::vector<Task> tasks;
  int64_t total = 0;
  if (!Runs<I>(in->at(2), n, &total, &tasks)) return MX_FAIL;
  if (total != Numel(in->at(1))) {
    MX_ERROR_MSG << "gs_block_add: the blocks hold " << total << " elements, the values " << Numel(in->at(1));
    return MX_FAIL;
  }
  const float alpha = GetFloat(attrs, "alpha", 1.f);
  Alias(in->at(0), &out->at(0), n * 4);
  float* t = Data<float>(out->at(0));
  const float* v = Data<float>(in->at(1));
  const int64_t T = static_cast<int64_t>(tasks.size());
  // blocks of one bucket do not overlap (each member's own slab), so runs are written once
#pragma omp parallel for schedule(dynamic, 16) if (total > kChunk)
  for (int64_t j = 0; j < T; ++j) {
    float* d = t + tasks[j].src;
    const float* s = v + tasks[j].dst;
    for (int64_t e = 0; e < tasks[j].len; ++e) d[e] += alpha * s[e];
  }
  return MX_SUCCESS;
}

#define GS_INDEX_DISPATCH(NAME, IMPL, WHICH)                                                         \
  MXReturnValue NAME(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,    \
                     const OpResource& res) {                                                        \
    if (in->at(WHICH).dtype == mxnet::ext::kInt32) return IMPL<int32_t>(attrs, in, out);              \
    return IMPL<int64_t>(attrs, in, out);                                                            \
  }

GS_INDEX_DISPATCH(ScatterAddForward, ScatterAddT, 2)
GS_INDEX_DISPATCH(BlockGatherForward, BlockGatherT, 1)
GS_INDEX_DISPATCH(BlockAddForward, BlockAddT, 2)

// ---------------------------------------------------------------------------------------------
// Glue to MXNet: inputs, outputs, types and shapes of each operator.

enum Which { kTopk, kEfTopk, kSignPack, kSignUnpack, kCast, kScatter, kGather, kBlockAdd };
struct Kind {
  Which which;
  int in, out;
  const char* name;
};
const Kind kTopkKind{kTopk, 1, 2, "gs_topk"}, kEfKind{kEfTopk, 2, 3, "gs_ef_topk"},
    kSignPackKind{kSignPack, 1, 2, "gs_sign_pack"}, kSignUnpackKind{kSignUnpack, 3, 1, "gs_sign_unpack_add"},
    kCastKind{kCast, 1, 2, "gs_cast_fp16"}, kScatterKind{kScatter, 3, 1, "gs_scatter_add"},
    kGatherKind{kGather, 2, 1, "gs_block_gather"}, kBlockAddKind{kBlockAdd, 3, 1, "gs_block_add"};

template <const Kind* K>
MXReturnValue ParseAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  *num_in = K->in;
  *num_out = K->out;
  int type;
  if ((K->which == kTopk || K->which == kEfTopk) && !IndexType(attrs, &type)) {
    MX_ERROR_MSG << K->name << ": index must be int32 or int64";
    return MX_FAIL;
  }
  return MX_SUCCESS;
}

bool IsIndex(int t) { return t == mxnet::ext::kInt32 || t == mxnet::ext::kInt64; }

template <const Kind* K>
MXReturnValue InferType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  // float32 data everywhere but the bit and index inputs
  for (int i = 0; i < K->in; ++i) {
    const bool bits = K->which == kSignUnpack && i == 1;
    const bool index = (K->which == kScatter && i == 2) || (K->which == kGather && i == 1) ||
                       (K->which == kBlockAdd && i == 2);
    const int t = in->at(i);
    if ((bits && t != mxnet::ext::kUint8) || (index && !IsIndex(t)) ||
        (!bits && !index && t != mxnet::ext::kFloat32)) {
      MX_ERROR_MSG << K->name << ": input " << i << " must be "
                   << (bits ? "uint8" : index ? "int32 or int64" : "float32");
      return MX_FAIL;
    }
  }
  for (int o = 0; o < K->out; ++o) out->at(o) = mxnet::ext::kFloat32;
  if (K->which == kTopk || K->which == kEfTopk) IndexType(attrs, &out->at(1));
  if (K->which == kSignPack) out->at(0) = mxnet::ext::kUint8;
  if (K->which == kCast) out->at(0) = mxnet::ext::kFloat16;
  return MX_SUCCESS;
}

template <const Kind* K>
MXReturnValue InferShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  const int64_t n = Numel(in->at(K->which == kEfTopk ? 1 : 0));
  if (TooLarge(n, 4, K->name)) return MX_FAIL;
  switch (K->which) {
    case kTopk:
    case kEfTopk: {
      const int64_t k = TopkK(attrs);
      if (k < 0 || k > n) {
        MX_ERROR_MSG << K->name << ": k = " << k << " is not within 0.." << n;
        return MX_FAIL;
      }
      if (K->which == kEfTopk && Get(attrs, "gradient", "1") == "1" && Numel(in->at(0)) != n) {
        MX_ERROR_MSG << "gs_ef_topk: the gradient has " << Numel(in->at(0)) << " elements, the residual " << n;
        return MX_FAIL;
      }
      out->at(0) = out->at(1) = {static_cast<unsigned>(k)};
      if (K->which == kEfTopk) out->at(2) = in->at(1);
      return MX_SUCCESS;
    }
    case kSignPack:
      out->at(0) = {static_cast<unsigned>((n + 7) / 8)};
      out->at(1) = {1u};
      return MX_SUCCESS;
    case kCast:
      out->at(0) = in->at(0);
      out->at(1) = {1u};
      return MX_SUCCESS;
    case kSignUnpack: {
      const int64_t rows = Numel(in->at(2));
      if (rows * ((n + 7) / 8) != Numel(in->at(1))) {
        MX_ERROR_MSG << "gs_sign_unpack_add: " << Numel(in->at(1)) << " bytes of bits for " << rows << " rows of "
                     << n << " signs";
        return MX_FAIL;
      }
      out->at(0) = in->at(0);
      return MX_SUCCESS;
    }
    case kScatter: {
      const int64_t m = Numel(in->at(1)), segments = std::max<int64_t>(1, GetInt(attrs, "segments", 1));
      if (Numel(in->at(2)) != m || m % segments != 0) {
        MX_ERROR_MSG << "gs_scatter_add: " << m << " values, " << Numel(in->at(2)) << " indices, " << segments
                     << " segments";
        return MX_FAIL;
      }
      out->at(0) = in->at(0);
      return MX_SUCCESS;
    }
    case kGather:
    case kBlockAdd: {
      const auto& b = in->at(K->which == kGather ? 1 : 2);
      if (b.size() != 2 || b[1] != 4) {
        MX_ERROR_MSG << K->name << ": blocks must be (m, 4): origin, rows, row length, row stride";
        return MX_FAIL;
      }
      if (K->which == kGather)
        out->at(0) = {static_cast<unsigned>(GetInt(attrs, "total", 0))};
      else
        out->at(0) = in->at(0);
      return MX_SUCCESS;
    }
  }
  return MX_SUCCESS;
}

}  // namespace

#define GS_REGISTER(NAME, FORWARD, KIND)          \
  REGISTER_OP(NAME)                               \
      .setForward(FORWARD, "cpu")                 \
      .setParseAttrs(ParseAttrs<&KIND>)           \
      .setInferType(InferType<&KIND>)             \
      .setInferShape(InferShape<&KIND>);

GS_REGISTER(gs_topk, TopkForward, kTopkKind)
GS_REGISTER(gs_ef_topk, TopkForward, kEfKind)
GS_REGISTER(gs_sign_pack, SignPackForward, kSignPackKind)
GS_REGISTER(gs_sign_unpack_add, SignUnpackAddForward, kSignUnpackKind)
GS_REGISTER(gs_cast_fp16, CastForward, kCastKind)
GS_REGISTER(gs_scatter_add, ScatterAddForward, kScatterKind)
GS_REGISTER(gs_block_gather, BlockGatherForward, kGatherKind)
GS_REGISTER(gs_block_add, BlockAddForward, kBlockAddKind)

MXReturnValue initialize(int version) {
  if (version < 10900) {
    MX_ERROR_MSG << "gluon_suite comm kernels need MXNet >= 1.9 (found " << version << ")";
    return MX_FAIL;
  }
  return MX_SUCCESS;
}
