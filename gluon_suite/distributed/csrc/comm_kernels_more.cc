// More compression kernels of gluon_suite.distributed (built into the same library as
// comm_kernels.cc): random-k's shared selection and bfloat16 payloads. CPU, float32 data, OpenMP
// across elements in fixed chunks, so every result is the same whatever the number of threads.
//
//   gs_randomk_gather(x, table; rotation, shift) -> values (k): x at random-k's k indices
//   gs_randomk_add(t, vals, table; rotation, shift, alpha) -> t with t[index_j] += alpha * vals_j
//     table: (2k,) float64, random-k's table of k uniforms written twice; the indices are
//     start_j + floor(frac(table[rotation + j] + shift) * width_j), start_j = floor(j n / k),
//     width_j = (start_{j+1} - start_j) * (1 - 2^-40), in float64: the numbers MXNet's operators
//     compute on the compressor's generic path, so both paths select the same coordinates.
//   gs_cast_bf16(x)                    -> bytes (2n uint8), finite (1): x rounded to bfloat16 (to
//                                        nearest, ties to even; NaN becomes 0x7fc0), each value
//                                        as two bytes, low byte first; finite = 1 when every
//                                        result is finite
//   gs_bf16_add(t, bytes; alpha)       -> t + alpha * each row's bfloat16 values, rows (of 2n
//                                        bytes: one per worker) added one after another
//   gs_ef_sign(g, r; gradient)         -> bits (ceil(n/8) uint8), scale (1), r' (out=r: in place):
//                                        error feedback with sign fused: v = g + r (v = r with
//                                        gradient=0, g then a placeholder), bits of v >= 0 and
//                                        scale = mean |v| as gs_sign_pack computes them, and
//                                        r' = v - scale * (+-1), as gs_sign_unpack_add with
//                                        alpha = -1 would leave it: two passes instead of three
//
// The adds are called with t as their output (MXNet's out=); given another output array they copy
// t into it first.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_common.h"
#include "sign_bits.h"


namespace {

const double kUnder = 1.0 - 0x1p-40;          // random-k's widths are taken just under the true one

// ---------------------------------------------------------------------------------------------
// Random-k: the k stratified indices of a buffer of n elements, from the shared table.

struct Strata {
  int64_t n, k, rotation;
  double shift;
  const double* table;

  // stratum j's index from its bounds; u * width >= 0, so truncation is the floor
  int64_t Pick(int64_t j, int64_t start, int64_t end) const {
    double u = table[rotation + j] + shift;   // in [0, 2): frac is one exact subtraction
    if (u >= 1.0) u -= 1.0;
    return start + static_cast<int64_t>(u * (static_cast<double>(end - start) * kUnder));
  }

  // f(j, index) for the strata j0 .. j1 - 1 in order, with one division in all: start_j =
  // floor(j n / k) = j q + floor(j r / k) for n = q k + r, the remainder j r mod k carried from one
  // stratum to the next (j n fits in 64 bits: n < 2^29, 2^31 bytes of float32)
  template <typename F>
  void ForEach(int64_t j0, int64_t j1, F f) const {
    if (j0 >= j1) return;
    const int64_t q = n / k, r = n % k;
    int64_t start = j0 * n / k, rem = (j0 * r) % k;
    for (int64_t j = j0; j < j1; ++j) {
      rem += r;
      const int64_t carry = rem >= k;
      rem -= carry * k;
      const int64_t end = start + q + carry;
      f(j, Pick(j, start, end));
      start = end;
    }
  }
};

bool ReadStrata(const Attrs& attrs, const MXTensor& table, int64_t n, const char* op, Strata* s) {
  s->n = n;
  s->k = Numel(table) / 2;
  s->rotation = GetInt(attrs, "rotation", 0);
  s->shift = GetDouble(attrs, "shift", 0.0);
  s->table = Data<double>(table);
  if (s->rotation < 0 || s->rotation >= s->k || !(s->shift >= 0.0 && s->shift < 1.0)) {
    MX_ERROR_MSG << op << ": rotation " << s->rotation << " must be within 0.." << s->k - 1 << " and shift "
                 << s->shift << " within [0, 1)";
    return false;
  }
  return true;
}

MXReturnValue RandomkGatherForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                   const OpResource& res) {
  const int64_t n = Numel(in->at(0));
  Strata s;
  if (TooLarge(n, 4, "gs_randomk_gather") || !ReadStrata(attrs, in->at(1), n, "gs_randomk_gather", &s))
    return MX_FAIL;
  const float* x = Data<float>(in->at(0));
  float* y = Data<float>(out->at(0));
  const int64_t C = Chunks(s.k);
#pragma omp parallel for schedule(static) if (C > 1)
  for (int64_t c = 0; c < C; ++c)
    s.ForEach(c * kChunk, std::min(s.k, (c + 1) * kChunk), [&](int64_t j, int64_t i) { y[j] = x[i]; });
  return MX_SUCCESS;
}

MXReturnValue RandomkAddForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                const OpResource& res) {
  const int64_t n = Numel(in->at(0));
  Strata s;
  if (TooLarge(n, 4, "gs_randomk_add") || !ReadStrata(attrs, in->at(2), n, "gs_randomk_add", &s)) return MX_FAIL;
  const float alpha = static_cast<float>(GetDouble(attrs, "alpha", 1.0));
  Alias(in->at(0), &out->at(0), n * 4);
  float* t = Data<float>(out->at(0));
  const float* v = Data<float>(in->at(1));
  // the strata are disjoint: each index is written by one j
  const int64_t C = Chunks(s.k);
#pragma omp parallel for schedule(static) if (C > 1)
  for (int64_t c = 0; c < C; ++c)
    s.ForEach(c * kChunk, std::min(s.k, (c + 1) * kChunk), [&](int64_t j, int64_t i) { t[i] += alpha * v[j]; });
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// bfloat16: the high half of a float32, rounded to nearest even on the low half.

inline uint16_t ToBf16(uint32_t u) {
  const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;   // an overflow carries into inf
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : r);
}

inline float FromBf16(uint32_t h) {
  const uint32_t u = h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

MXReturnValue CastBf16Forward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                              const OpResource& res) {
  const int64_t n = Numel(in->at(0));
  if (TooLarge(n, 4, "gs_cast_bf16")) return MX_FAIL;
  const uint32_t* x = Data<uint32_t>(in->at(0));
  uint8_t* y = Data<uint8_t>(out->at(0));
  const int64_t C = Chunks(n);
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t c = 0; c < C; ++c) {
    const int64_t begin = c * kChunk, end = std::min(n, (c + 1) * kChunk);
    unsigned inf = 0;
    for (int64_t i = begin; i < end; ++i) {
      const uint16_t h = ToBf16(x[i]);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      std::memcpy(y + 2 * i, &h, 2);
#else
      y[2 * i] = static_cast<uint8_t>(h & 0xffu);
      y[2 * i + 1] = static_cast<uint8_t>(h >> 8);
#endif
      inf |= (h & 0x7f80u) == 0x7f80u;
    }
    bad |= static_cast<int>(inf);
  }
  Data<float>(out->at(1))[0] = bad ? 0.f : 1.f;
  return MX_SUCCESS;
}

MXReturnValue Bf16AddForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                             const OpResource& res) {
  const int64_t n = Numel(in->at(0));
  if (TooLarge(n, 4, "gs_bf16_add")) return MX_FAIL;
  const int64_t rows = n ? Numel(in->at(1)) / (2 * n) : 0;
  const float alpha = static_cast<float>(GetDouble(attrs, "alpha", 1.0));
  Alias(in->at(0), &out->at(0), n * 4);
  float* t = Data<float>(out->at(0));
  const uint8_t* b = Data<uint8_t>(in->at(1));
  const int64_t C = Chunks(n);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const int64_t begin = c * kChunk, end = std::min(n, (c + 1) * kChunk);
    for (int64_t w = 0; w < rows; ++w) {   // row after row, as one add per worker would
      const uint8_t* r = b + 2 * n * w;
      for (int64_t i = begin; i < end; ++i) {
        const uint32_t h = static_cast<uint32_t>(r[2 * i]) | (static_cast<uint32_t>(r[2 * i + 1]) << 8);
        t[i] += alpha * FromBf16(h);
      }
    }
  }
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Error feedback with sign: the sum, the bits and the scale in one pass (the scale's additions in
// gs_sign_pack's order: sign_bits.h per chunk, chunks in order), the new residual in a second (the
// scale is known only after the first).

MXReturnValue EfSignForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                            const OpResource& res) {
  const int64_t n = Numel(in->at(1));
  if (TooLarge(n, 4, "gs_ef_sign")) return MX_FAIL;
  const bool gradient = GetInt(attrs, "gradient", 1) != 0;
  const float* g = Data<float>(in->at(0));
  if (!gradient) Alias(in->at(1), &out->at(2), n * 4);
  const float* r = Data<float>(in->at(1));
  float* v = Data<float>(out->at(2));   // r itself with out=r
  uint8_t* bits = Data<uint8_t>(out->at(0));
  const int64_t bytes = (n + 7) / 8, per = kChunk / 8, C = (bytes + per - 1) / per;
  const bool simd = HasAVX512() && Get(attrs, "simd", "1") == "1";   // simd=0: portable (tests)
  std::vector<double> part(C, 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    const int64_t first = c * per, end = std::min(bytes, (c + 1) * per);
    const int64_t i0 = first * 8, i1 = std::min(n, end * 8);
    if (gradient) {
      for (int64_t i = i0; i < i1; ++i) v[i] = g[i] + r[i];
    }
    part[c] = gs_sign::PackRange(v, n, first, end, bits, simd);   // the chunk, still in cache
  }
  double total = 0.0;
  for (int64_t c = 0; c < C; ++c) total += part[c];
  const float scale = n ? static_cast<float>(total / static_cast<double>(n)) : 0.f;
  Data<float>(out->at(1))[0] = scale;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) v[i] += v[i] >= 0.f ? -scale : scale;
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Glue to MXNet: inputs, outputs, types and shapes of each operator.

enum Which { kGather, kAdd, kCast, kBfAdd, kEfSign };
struct Kind {
  Which which;
  int in, out;
  const char* name;
};
const Kind kGatherKind{kGather, 2, 1, "gs_randomk_gather"}, kAddKind{kAdd, 3, 1, "gs_randomk_add"},
    kCastKind{kCast, 1, 2, "gs_cast_bf16"}, kBfAddKind{kBfAdd, 2, 1, "gs_bf16_add"},
    kEfSignKind{kEfSign, 2, 3, "gs_ef_sign"};

template <const Kind* K>
MXReturnValue ParseAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  *num_in = K->in;
  *num_out = K->out;
  return MX_SUCCESS;
}

// the expected type of input i: the table float64, the bytes uint8, the rest float32
int InputType(Which w, int i) {
  if ((w == kGather && i == 1) || (w == kAdd && i == 2)) return mxnet::ext::kFloat64;
  if (w == kBfAdd && i == 1) return mxnet::ext::kUint8;
  return mxnet::ext::kFloat32;
}

const char* TypeName(int t) {
  return t == mxnet::ext::kFloat64 ? "float64" : t == mxnet::ext::kUint8 ? "uint8" : "float32";
}

template <const Kind* K>
MXReturnValue InferType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  for (int i = 0; i < K->in; ++i) {
    if (in->at(i) != InputType(K->which, i)) {
      MX_ERROR_MSG << K->name << ": input " << i << " must be " << TypeName(InputType(K->which, i));
      return MX_FAIL;
    }
  }
  for (int o = 0; o < K->out; ++o) out->at(o) = mxnet::ext::kFloat32;
  if (K->which == kCast || K->which == kEfSign) out->at(0) = mxnet::ext::kUint8;
  return MX_SUCCESS;
}

template <const Kind* K>
MXReturnValue InferShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  const int64_t n = Numel(in->at(K->which == kEfSign ? 1 : 0));
  if (TooLarge(n, 4, K->name)) return MX_FAIL;
  switch (K->which) {
    case kEfSign:
      if (GetInt(attrs, "gradient", 1) != 0 && Numel(in->at(0)) != n) {
        MX_ERROR_MSG << "gs_ef_sign: the gradient has " << Numel(in->at(0)) << " elements, the residual " << n;
        return MX_FAIL;
      }
      out->at(0) = {static_cast<unsigned>((n + 7) / 8)};
      out->at(1) = {1u};
      out->at(2) = in->at(1);
      return MX_SUCCESS;
    case kGather:
    case kAdd: {
      const int64_t t = Numel(in->at(K->which == kGather ? 1 : 2)), k = t / 2;
      if (t % 2 || k < 1 || k > n || (K->which == kAdd && Numel(in->at(1)) != k)) {
        MX_ERROR_MSG << K->name << ": a table of " << t << " numbers (2k, 1 <= k <= " << n << ")"
                     << (K->which == kAdd ? " and one value per index" : "");
        return MX_FAIL;
      }
      out->at(0) = K->which == kGather ? std::vector<unsigned int>{static_cast<unsigned>(k)} : in->at(0);
      return MX_SUCCESS;
    }
    case kCast:
      out->at(0) = {static_cast<unsigned>(2 * n)};
      out->at(1) = {1u};
      return MX_SUCCESS;
    case kBfAdd: {
      const int64_t bytes = Numel(in->at(1));
      if (n == 0 || bytes % (2 * n)) {
        MX_ERROR_MSG << "gs_bf16_add: " << bytes << " bytes are not rows of 2 x " << n << " bytes";
        return MX_FAIL;
      }
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

GS_REGISTER(gs_randomk_gather, RandomkGatherForward, kGatherKind)
GS_REGISTER(gs_randomk_add, RandomkAddForward, kAddKind)
GS_REGISTER(gs_cast_bf16, CastBf16Forward, kCastKind)
GS_REGISTER(gs_bf16_add, Bf16AddForward, kBfAddKind)
GS_REGISTER(gs_ef_sign, EfSignForward, kEfSignKind)
