// Message-passing kernels of gluon_suite.graph as MXNet library operators (forward and backward,
// OpenMP over rows). Every operator takes the graph's structure as eight index tensors, all of one
// integer type (int32 or int64), in this order:
//   indptr_d (N_dst+1), src_d (E), eid_d (E)   edges grouped by destination: row v holds positions
//                                              indptr_d[v]..indptr_d[v+1] with source src_d[k] and
//                                              edge id eid_d[k]
//   indptr_s (N_src+1), dst_s (E), eid_s (E)   the same grouped by source
//   src (E), dst (E)                           endpoints in edge-id order
// Every output row is written by exactly one thread (gradients of source-side tensors run over
// the source grouping), so no atomics and the results do not depend on the thread count.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mxnet/lib_api.h"

using mxnet::ext::MXReturnValue;
using mxnet::ext::MXTensor;
using mxnet::ext::OpResource;
using mxnet::ext::MX_SUCCESS;
using mxnet::ext::MX_FAIL;
typedef std::unordered_map<std::string, std::string> Attrs;
typedef std::vector<std::vector<unsigned int>> Shapes;

namespace {

const int kStructure = 8;   // index tensors after the data inputs

enum Op { kAdd, kSub, kMul, kDiv, kDot, kCopyL, kCopyR };
enum Reduce { kSum, kMax, kMin, kMean };

std::string Get(const Attrs& a, const char* key, const char* fallback) {
  auto it = a.find(key);
  return it == a.end() ? std::string(fallback) : it->second;
}

bool Flag(const Attrs& a, const char* key) { return Get(a, key, "0") == "1"; }

bool ParseOp(const std::string& s, Op* op) {
  static const std::unordered_map<std::string, Op> names = {
      {"add", kAdd}, {"sub", kSub}, {"mul", kMul}, {"div", kDiv}, {"dot", kDot},
      {"copy_lhs", kCopyL}, {"copy_rhs", kCopyR}};
  auto it = names.find(s);
  if (it == names.end()) return false;
  *op = it->second;
  return true;
}

bool ParseReduce(const std::string& s, Reduce* r) {
  if (s == "sum") *r = kSum;
  else if (s == "mean") *r = kMean;
  else if (s == "max") *r = kMax;
  else if (s == "min") *r = kMin;
  else
    return false;
  return true;
}

std::vector<int64_t> RowShape(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

int64_t Prod(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// How the per-row features of two operands meet: the lower-rank side gets trailing 1s, then
// sizes broadcast dimension by dimension. For kDot the last broadcast dimension is summed.
// lidx/ridx map each element of the full broadcast row to an element of the lhs/rhs row.
struct Bcast {
  std::vector<int64_t> shape;     // the output row's shape (dot: last dimension 1)
  int64_t full = 1, out = 1, red = 1, lhs = 1, rhs = 1;
  std::vector<int64_t> lidx, ridx;
  bool lid = false, rid = false;  // index map is the identity
  int64_t rchunk = 0;             // ridx[j] == j / rchunk for all j (a value per chunk), else 0

  bool Init(std::vector<int64_t> l, std::vector<int64_t> r, Op op, std::string* err) {
    if (op == kCopyL) r = l;
    if (op == kCopyR) l = r;
    while (l.size() < r.size()) l.push_back(1);
    while (r.size() < l.size()) r.push_back(1);
    std::vector<int64_t> b(l.size());
    for (size_t d = 0; d < l.size(); ++d) {
      if (l[d] != r[d] && l[d] != 1 && r[d] != 1) {
        *err = "feature shapes do not broadcast";
        return false;
      }
      b[d] = std::max(l[d], r[d]);
    }
    lhs = Prod(l), rhs = Prod(r), full = Prod(b);
    shape = b;
    if (op == kDot) {
      red = b.empty() ? 1 : b.back();
      if (!shape.empty()) shape.back() = 1;
    }
    out = red ? full / red : 0;
    lidx.assign(full, 0), ridx.assign(full, 0);
    std::vector<int64_t> pos(b.size(), 0);
    for (int64_t j = 0; j < full; ++j) {
      int64_t li = 0, ri = 0;
      for (size_t d = 0; d < b.size(); ++d) {
        li = li * l[d] + (l[d] == 1 ? 0 : pos[d]);
        ri = ri * r[d] + (r[d] == 1 ? 0 : pos[d]);
      }
      lidx[j] = li, ridx[j] = ri;
      for (int d = static_cast<int>(b.size()) - 1; d >= 0; --d) {
        if (++pos[d] < b[d]) break;
        pos[d] = 0;
      }
    }
    // the unused operand of a copy is never read past its first element (it may be a placeholder)
    if (op == kCopyL) rhs = 0, std::fill(ridx.begin(), ridx.end(), 0);
    if (op == kCopyR) lhs = 0, std::fill(lidx.begin(), lidx.end(), 0);
    lid = lhs == full, rid = rhs == full;
    if (rhs > 0 && full % rhs == 0) {
      int64_t c = full / rhs;
      bool ok = true;
      for (int64_t j = 0; j < full && ok; ++j) ok = ridx[j] == j / c;
      rchunk = ok ? c : 0;
    }
    return true;
  }
};

inline float Apply(Op op, float a, float b) {
  switch (op) {
    case kAdd: return a + b;
    case kSub: return a - b;
    case kMul: case kDot: return a * b;
    case kDiv: return a / b;
    case kCopyL: return a;
    default: return b;
  }
}

// d op / d a and d op / d b
inline float GradL(Op op, float a, float b) {
  switch (op) {
    case kMul: case kDot: return b;
    case kDiv: return 1.f / b;
    case kCopyR: return 0.f;
    default: return 1.f;
  }
}
inline float GradR(Op op, float a, float b) {
  switch (op) {
    case kSub: return -1.f;
    case kMul: case kDot: return a;
    case kDiv: return -a / (b * b);
    case kCopyL: return 0.f;
    default: return 1.f;
  }
}

bool Bad(const MXTensor& t) { return t.data_ptr == nullptr; }

// Prefetch the rows a loop will read a few iterations ahead (gathers are latency-bound).
const int kAhead = 6;
inline void Prefetch(const float* p, int64_t len) {
  for (int64_t i = 0; i < len; i += 16) __builtin_prefetch(p + i);
}

// out = sum over k in [k0, k1) of scale(k) * base[idx[k]] (rows of L floats), in list order. For
// the common widths the row accumulates in a local array, which the compiler keeps in registers,
// instead of being stored and reloaded for every neighbour (the output row may alias the input
// for all the compiler knows); the operations, and so the sums, are the same either way.
struct Unit {
  template <typename I>
  float operator()(I) const { return 1.f; }
};

template <int W, typename I, typename Scale>
inline void GatherSumFixed(const float* base, const I* idx, I k0, I k1, Scale scale, float* out, int64_t stride) {
  float acc[W];
  for (int j = 0; j < W; ++j) acc[j] = 0.f;
  for (I k = k0; k < k1; ++k) {
    if (k + kAhead < k1) Prefetch(base + static_cast<int64_t>(idx[k + kAhead]) * stride, W);
    const float* x = base + static_cast<int64_t>(idx[k]) * stride;
    const float s = scale(k);
    for (int j = 0; j < W; ++j) acc[j] += s * x[j];
  }
  for (int j = 0; j < W; ++j) out[j] = acc[j];
}

// ``stride``: the distance between rows of base (L when 0), for a column block of wider rows.
template <typename I, typename Scale>
inline void GatherSum(const float* base, const I* idx, I k0, I k1, int64_t L, Scale scale, float* out,
                      int64_t stride = 0) {
  if (stride == 0) stride = L;
  switch (L) {
    case 8: return GatherSumFixed<8>(base, idx, k0, k1, scale, out, stride);
    case 16: return GatherSumFixed<16>(base, idx, k0, k1, scale, out, stride);
    case 32: return GatherSumFixed<32>(base, idx, k0, k1, scale, out, stride);
    case 64: return GatherSumFixed<64>(base, idx, k0, k1, scale, out, stride);
    case 128: return GatherSumFixed<128>(base, idx, k0, k1, scale, out, stride);
    default: break;
  }
  std::fill(out, out + L, 0.f);
  for (I k = k0; k < k1; ++k) {
    if (k + kAhead < k1) Prefetch(base + static_cast<int64_t>(idx[k + kAhead]) * stride, L);
    const float* x = base + static_cast<int64_t>(idx[k]) * stride;
    const float s = scale(k);
    for (int64_t j = 0; j < L; ++j) out[j] += s * x[j];
  }
}

// Run CALL with the constexpr int O set to the runtime operator `op`.
#define GS_WITH_OP(op, CALL)                                    \
  switch (op) {                                                 \
    case kAdd: { constexpr int O = kAdd; CALL; } break;         \
    case kSub: { constexpr int O = kSub; CALL; } break;         \
    case kMul: { constexpr int O = kMul; CALL; } break;         \
    case kDiv: { constexpr int O = kDiv; CALL; } break;         \
    case kDot: { constexpr int O = kDot; CALL; } break;         \
    case kCopyL: { constexpr int O = kCopyL; CALL; } break;     \
    default: { constexpr int O = kCopyR; CALL; } break;         \
  }

// ---------------------------------------------------------------------------------------------
// gSpMM: out[v] = reduce over edges u->v of op(lhs[u], rhs[e]); empty rows give 0.
// Inputs: lhs (N_src, ...), rhs (E, ...) (the unused one of a copy may be any placeholder),
// structure. Attributes: op, reduce.
template <typename I, int O>
void SpmmForward(const Bcast& b, Reduce red, const float* X, const float* W, const I* indptr,
                 const I* nbr, const I* eid, int64_t n, float* Y) {
  constexpr Op op = static_cast<Op>(O);
  const int64_t L = b.out;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t v = 0; v < n; ++v) {
    float* o = Y + v * L;
    const I k0 = indptr[v], k1 = indptr[v + 1];
    if (red == kSum || red == kMean) {
      if (!(op == kCopyL && b.lid)) std::fill(o, o + L, 0.f);   // GatherSum writes the whole row
      if (op == kCopyL && b.lid) {
        GatherSum(X, nbr, k0, k1, L, Unit(), o);
      } else if (op == kCopyR && b.rid) {
        for (I k = k0; k < k1; ++k) {
          const float* w = W + static_cast<int64_t>(eid[k]) * L;
          for (int64_t j = 0; j < L; ++j) o[j] += w[j];
        }
      } else if (op == kMul && b.lid && b.rchunk) {
        const int64_t C = b.rchunk, H = b.rhs;
        for (I k = k0; k < k1; ++k) {
          if (k + kAhead < k1) {
            Prefetch(X + static_cast<int64_t>(nbr[k + kAhead]) * L, L);
            __builtin_prefetch(W + static_cast<int64_t>(eid[k + kAhead]) * H);
          }
          const float* x = X + static_cast<int64_t>(nbr[k]) * L;
          const float* w = W + static_cast<int64_t>(eid[k]) * H;
          for (int64_t h = 0; h < H; ++h) {
            const float s = w[h];
            float* oh = o + h * C;
            const float* xh = x + h * C;
            for (int64_t c = 0; c < C; ++c) oh[c] += s * xh[c];
          }
        }
      } else {
        for (I k = k0; k < k1; ++k) {
          const float* x = X + static_cast<int64_t>(nbr[k]) * b.lhs;
          const float* w = W + static_cast<int64_t>(eid[k]) * b.rhs;
          for (int64_t j = 0; j < L; ++j) o[j] += Apply(op, x[b.lidx[j]], w[b.ridx[j]]);
        }
      }
      if (red == kMean && k1 > k0) {
        const float inv = 1.f / static_cast<float>(k1 - k0);
        for (int64_t j = 0; j < L; ++j) o[j] *= inv;
      }
    } else {
      const bool mx = red == kMax;
      std::fill(o, o + L, mx ? -std::numeric_limits<float>::infinity()
                             : std::numeric_limits<float>::infinity());
      if (op == kCopyL && b.lid) {    // contiguous rows: no index maps, prefetched gathers
        for (I k = k0; k < k1; ++k) {
          if (k + kAhead < k1) Prefetch(X + static_cast<int64_t>(nbr[k + kAhead]) * L, L);
          const float* x = X + static_cast<int64_t>(nbr[k]) * L;
          if (mx) {
            for (int64_t j = 0; j < L; ++j) o[j] = x[j] > o[j] ? x[j] : o[j];
          } else {
            for (int64_t j = 0; j < L; ++j) o[j] = x[j] < o[j] ? x[j] : o[j];
          }
        }
        if (k0 == k1) std::fill(o, o + L, 0.f);
        continue;
      }
      for (I k = k0; k < k1; ++k) {
        const float* x = X + static_cast<int64_t>(nbr[k]) * b.lhs;
        const float* w = W + static_cast<int64_t>(eid[k]) * b.rhs;
        for (int64_t j = 0; j < L; ++j) {
          const float m = Apply(op, x[b.lidx[j]], w[b.ridx[j]]);
          if (mx ? m > o[j] : m < o[j]) o[j] = m;
        }
      }
      if (k0 == k1) std::fill(o, o + L, 0.f);
    }
  }
}

// The id of the first edge (in destination order) reaching each output element of a max/min
// reduction, -1 for empty rows: recomputed from the output in the backward pass.
template <typename I, int O>
void ArgReduce(const Bcast& b, const float* X, const float* W, const float* Y, const I* indptr,
               const I* nbr, const I* eid, int64_t n, I* arg) {
  constexpr Op op = static_cast<Op>(O);
  const int64_t L = b.out;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t v = 0; v < n; ++v) {
    I* a = arg + v * L;
    std::fill(a, a + L, static_cast<I>(-1));
    const float* y = Y + v * L;
    for (I k = indptr[v]; k < indptr[v + 1]; ++k) {
      const float* x = X + static_cast<int64_t>(nbr[k]) * b.lhs;
      const I e = eid[k];
      if (op == kCopyL && b.lid) {
        if (k + kAhead < indptr[v + 1]) Prefetch(X + static_cast<int64_t>(nbr[k + kAhead]) * L, L);
        for (int64_t j = 0; j < L; ++j)
          if (a[j] < 0 && x[j] == y[j]) a[j] = e;
        continue;
      }
      const float* w = W + static_cast<int64_t>(e) * b.rhs;
      for (int64_t j = 0; j < L; ++j)
        if (a[j] < 0 && Apply(op, x[b.lidx[j]], w[b.ridx[j]]) == y[j]) a[j] = e;
    }
  }
}

template <typename I, int O>
void SpmmBackward(const Bcast& b, Reduce red, const float* dY, const float* X, const float* W,
                  const float* Y, const I* const* s, int64_t n_dst, int64_t n_src, float* dX,
                  float* dW) {
  constexpr Op op = static_cast<Op>(O);
  const I *indptr = s[0], *nbr = s[1], *eid = s[2], *rptr = s[3], *rnbr = s[4], *reid = s[5];
  const int64_t L = b.out;
  const I* src = s[6];
  // edge ids of the extremes, in the structure's index type: every entry is written by ArgReduce
  std::unique_ptr<I[]> arg;
  const bool sum = red == kSum || red == kMean;
  if (!sum) {
    arg.reset(new I[n_dst * L]);
    ArgReduce<I, O>(b, X, W, Y, indptr, nbr, eid, n_dst, arg.get());
  }
  if (dX != nullptr && !sum && op == kCopyL && b.lid) {
    // each extreme's gradient goes to the source of its edge: a scatter over destinations,
    // threads owning disjoint column blocks (one writer per element, deterministic)
    std::fill(dX, dX + n_src * L, 0.f);
    const I* a = arg.get();
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t j0 = L * t / nt, j1 = L * (t + 1) / nt;
      for (int64_t v = 0; v < n_dst; ++v)
        for (int64_t j = j0; j < j1; ++j) {
          const I e = a[v * L + j];
          if (e >= 0) dX[static_cast<int64_t>(src[e]) * L + j] += dY[v * L + j];
        }
    }
    dX = nullptr;
  }
  if (dX != nullptr) {
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t u = 0; u < n_src; ++u) {
      float* d = dX + u * b.lhs;
      if (sum && op == kCopyL && b.lid && b.lhs == L) {
        // a mean divides each destination's sum by its in-degree (>= 1: this edge reaches it)
        if (red == kMean)
          GatherSum(dY, rnbr, rptr[u], rptr[u + 1], L,
                    [&](I k) { return 1.f / static_cast<float>(indptr[rnbr[k] + 1] - indptr[rnbr[k]]); }, d);
        else
          GatherSum(dY, rnbr, rptr[u], rptr[u + 1], L, Unit(), d);
        continue;
      }
      std::fill(d, d + b.lhs, 0.f);
      if (op == kCopyR) continue;
      const float* x = X + u * b.lhs;
      for (I k = rptr[u]; k < rptr[u + 1]; ++k) {
        if (k + kAhead < rptr[u + 1]) {
          Prefetch(dY + static_cast<int64_t>(rnbr[k + kAhead]) * L, L);
          __builtin_prefetch(W + static_cast<int64_t>(reid[k + kAhead]) * b.rhs);
        }
        const int64_t v = rnbr[k], e = reid[k];
        const float* dy = dY + v * L;
        const float* w = W + e * b.rhs;
        if (sum) {
          // a mean divides each destination's sum by its in-degree (>= 1: this edge reaches it)
          const float m = red == kMean ? 1.f / static_cast<float>(indptr[v + 1] - indptr[v]) : 1.f;
          if (op == kCopyL && b.lid) {
            for (int64_t j = 0; j < L; ++j) d[j] += m * dy[j];
          } else if (op == kMul && b.lid && b.rchunk) {
            const int64_t C = b.rchunk;
            for (int64_t h = 0; h < b.rhs; ++h) {
              const float sc = m * w[h];
              for (int64_t c = 0; c < C; ++c) d[h * C + c] += sc * dy[h * C + c];
            }
          } else {
            for (int64_t j = 0; j < L; ++j)
              d[b.lidx[j]] += m * GradL(op, x[b.lidx[j]], w[b.ridx[j]]) * dy[j];
          }
        } else if (op == kCopyL && b.lid) {
          const I* a = arg.get() + v * L;
          for (int64_t j = 0; j < L; ++j)
            if (a[j] == e) d[j] += dy[j];
        } else {
          const I* a = arg.get() + v * L;
          for (int64_t j = 0; j < L; ++j)
            if (a[j] == e) d[b.lidx[j]] += GradL(op, x[b.lidx[j]], w[b.ridx[j]]) * dy[j];
        }
      }
    }
  }
  if (dW != nullptr) {
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t v = 0; v < n_dst; ++v) {
      const float* dy = dY + v * L;
      for (I k = indptr[v]; k < indptr[v + 1]; ++k) {
        float* d = dW + static_cast<int64_t>(eid[k]) * b.rhs;
        std::fill(d, d + b.rhs, 0.f);
      }
      if (op == kCopyL) continue;
      if (sum) {
        const float m = red == kMean && indptr[v + 1] > indptr[v] ? 1.f / static_cast<float>(indptr[v + 1] - indptr[v]) : 1.f;
        for (I k = indptr[v]; k < indptr[v + 1]; ++k) {
          if (k + kAhead < indptr[v + 1]) Prefetch(X + static_cast<int64_t>(nbr[k + kAhead]) * b.lhs, b.lhs);
          const int64_t e = eid[k];
          float* d = dW + e * b.rhs;
          const float* x = X + static_cast<int64_t>(nbr[k]) * b.lhs;
          const float* w = W + e * b.rhs;
          if (op == kMul && b.lid && b.rchunk) {
            const int64_t C = b.rchunk;
            for (int64_t h = 0; h < b.rhs; ++h) {
              float acc = 0.f;
              for (int64_t c = 0; c < C; ++c) acc += x[h * C + c] * dy[h * C + c];
              d[h] = m * acc;
            }
          } else if (op == kCopyR && b.rid) {
            for (int64_t j = 0; j < L; ++j) d[j] = m * dy[j];
          } else {
            for (int64_t j = 0; j < L; ++j)
              d[b.ridx[j]] += m * GradR(op, x[b.lidx[j]], w[b.ridx[j]]) * dy[j];
          }
        }
      } else {
        const I* a = arg.get() + v * L;
        for (int64_t j = 0; j < L; ++j) {
          if (a[j] < 0) continue;
          const int64_t e = a[j];
          const float* x = X + static_cast<int64_t>(src[e]) * b.lhs;
          const float* w = W + e * b.rhs;
          dW[e * b.rhs + b.ridx[j]] += GradR(op, x[b.lidx[j]], w[b.ridx[j]]) * dy[j];
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// gSDDMM: out[e] = op(lhs[row_l(e)], rhs[row_r(e)]) with row_t(e) = src[e], dst[e] or e for the
// targets u, v, e. Attributes: op, lhs_target, rhs_target.
template <typename I>
inline int64_t Row(char target, const I* src, const I* dst, int64_t e) {
  return target == 'u' ? static_cast<int64_t>(src[e]) : target == 'v' ? static_cast<int64_t>(dst[e]) : e;
}

template <typename I, int O>
void SddmmForward(const Bcast& b, char lt, char rt, const float* A, const float* B, const I* src,
                  const I* dst, int64_t E, float* Y) {
  constexpr Op op = static_cast<Op>(O);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < E; ++e) {
    if (e + kAhead < E) {
      Prefetch(A + Row(lt, src, dst, e + kAhead) * b.lhs, b.lhs);
      Prefetch(B + Row(rt, src, dst, e + kAhead) * b.rhs, b.rhs);
    }
    const float* a = A + Row(lt, src, dst, e) * b.lhs;
    const float* c = B + Row(rt, src, dst, e) * b.rhs;
    float* o = Y + e * b.out;
    if (op == kDot && b.lid && b.rid) {
      for (int64_t j = 0; j < b.out; ++j) {
        float acc = 0.f;
        const float *aj = a + j * b.red, *cj = c + j * b.red;
        for (int64_t r = 0; r < b.red; ++r) acc += aj[r] * cj[r];
        o[j] = acc;
      }
    } else if (op == kDot) {
      for (int64_t q = 0, j = 0; q < b.out; ++q) {
        float acc = 0.f;
        for (int64_t r = 0; r < b.red; ++r, ++j) acc += a[b.lidx[j]] * c[b.ridx[j]];
        o[q] = acc;
      }
    } else if (b.lid && b.rid && op == kAdd) {
      for (int64_t j = 0; j < b.out; ++j) o[j] = a[j] + c[j];
    } else {
      for (int64_t j = 0; j < b.out; ++j) o[j] = Apply(op, a[b.lidx[j]], c[b.ridx[j]]);
    }
  }
}

// Gradient of one operand (side 0: lhs, 1: rhs) of an SDDMM, grouped by that operand's rows so
// that every row is summed by one thread.
template <typename I, int O, int SIDE>
void SddmmBackwardSide(const Bcast& b, char lt, char rt, const float* dY, const float* A,
                       const float* B, const I* const* s, int64_t E, int64_t n_rows, float* dT,
                       bool accumulate = false) {
  constexpr Op op = static_cast<Op>(O);
  constexpr int side = SIDE;
  const char target = side == 0 ? lt : rt;
  const char other = side == 0 ? rt : lt;
  const int64_t len = side == 0 ? b.lhs : b.rhs;
  const bool both = b.lid && b.rid;
  const I *src = s[6], *dst = s[7];
  const I* ptr = target == 'u' ? s[3] : s[0];
  const I* ids = target == 'u' ? s[5] : s[2];
  const int64_t rows = target == 'e' ? E : n_rows;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dT + r * len;
    if (!accumulate) std::fill(d, d + len, 0.f);
    const int64_t k0 = target == 'e' ? r : static_cast<int64_t>(ptr[r]);
    const int64_t k1 = target == 'e' ? r + 1 : static_cast<int64_t>(ptr[r + 1]);
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t e = target == 'e' ? k : static_cast<int64_t>(ids[k]);
      if (k + kAhead < k1) {
        const int64_t e2 = target == 'e' ? k + kAhead : static_cast<int64_t>(ids[k + kAhead]);
        Prefetch((side == 0 ? B : A) + Row(other, src, dst, e2) * (side == 0 ? b.rhs : b.lhs),
                 side == 0 ? b.rhs : b.lhs);
        __builtin_prefetch(dY + e2 * b.out);
      }
      const float* a = A + Row(lt, src, dst, e) * b.lhs;
      const float* c = B + Row(rt, src, dst, e) * b.rhs;
      const float* dy = dY + e * b.out;
      if (both) {
        for (int64_t q = 0; q < b.out; ++q) {
          const float g = dy[q];
          const float *aq = a + q * b.red, *cq = c + q * b.red;
          float* dq = d + q * b.red;
          for (int64_t r = 0; r < b.red; ++r)
            dq[r] += (side == 0 ? GradL(op, aq[r], cq[r]) : GradR(op, aq[r], cq[r])) * g;
        }
        continue;
      }
      const int64_t* idx = side == 0 ? b.lidx.data() : b.ridx.data();
      for (int64_t q = 0, j = 0; q < b.out; ++q) {
        const float g = dy[q];
        for (int64_t r = 0; r < b.red; ++r, ++j)
          d[idx[j]] += (side == 0 ? GradL(op, a[b.lidx[j]], c[b.ridx[j]]) : GradR(op, a[b.lidx[j]], c[b.ridx[j]])) * g;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Edge softmax over each destination's incoming edges, per trailing element:
// a[e] = exp(s[e] - m) / sum over the row of exp(s - m); backward ds = a * (g - sum(g * a)).
template <typename I>
void SoftmaxForward(const float* S, const I* indptr, const I* eid, int64_t n, int64_t L, float* A) {
#pragma omp parallel
  {
    std::vector<float> mx(L), z(L), p;
#pragma omp for schedule(dynamic, 64)
    for (int64_t v = 0; v < n; ++v) {
      const I k0 = indptr[v], k1 = indptr[v + 1];
      if (k0 == k1) continue;
      p.resize(static_cast<size_t>((k1 - k0) * L));
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<float>::infinity());
      std::fill(z.begin(), z.end(), 0.f);
      for (I k = k0; k < k1; ++k) {
        if (k + kAhead < k1) __builtin_prefetch(S + static_cast<int64_t>(eid[k + kAhead]) * L);
        const float* s = S + static_cast<int64_t>(eid[k]) * L;
        float* pk = p.data() + (k - k0) * L;
        for (int64_t h = 0; h < L; ++h) pk[h] = s[h], mx[h] = std::max(mx[h], s[h]);
      }
      for (I k = k0; k < k1; ++k) {
        float* pk = p.data() + (k - k0) * L;
        for (int64_t h = 0; h < L; ++h) pk[h] = std::exp(pk[h] - mx[h]), z[h] += pk[h];
      }
      for (int64_t h = 0; h < L; ++h) z[h] = 1.f / z[h];
      for (I k = k0; k < k1; ++k) {
        float* a = A + static_cast<int64_t>(eid[k]) * L;
        const float* pk = p.data() + (k - k0) * L;
        for (int64_t h = 0; h < L; ++h) a[h] = pk[h] * z[h];
      }
    }
  }
}

template <typename I>
void SoftmaxBackward(const float* dY, const float* A, const I* indptr, const I* eid, int64_t n, int64_t L,
                     float* dS) {
#pragma omp parallel
  {
    std::vector<float> t(L);
#pragma omp for schedule(dynamic, 64)
    for (int64_t v = 0; v < n; ++v) {
      const I k0 = indptr[v], k1 = indptr[v + 1];
      std::fill(t.begin(), t.end(), 0.f);
      for (I k = k0; k < k1; ++k) {
        const int64_t e = eid[k];
        for (int64_t h = 0; h < L; ++h) t[h] += dY[e * L + h] * A[e * L + h];
      }
      for (I k = k0; k < k1; ++k) {
        const int64_t e = eid[k];
        for (int64_t h = 0; h < L; ++h) dS[e * L + h] = A[e * L + h] * (dY[e * L + h] - t[h]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// GAT's attention step: out[v, h] = sum over edges u->v of a[e, h] * mask[e, h] * x[u, h] with
// a = edge softmax of leaky_relu(el[u, h] + er[v, h]). x (N_src, H, F), el (N_src, H),
// er (N_dst, H), mask (E, H) or a placeholder of one element. Attributes: slope, masked.
// The backward recomputes a (E x H, cheap) instead of keeping it from the forward.
template <typename I>
void GatScores(const float* el, const float* er, const I* nbr, I k0, I k1, int64_t v, int64_t H, float slope,
               float* p, float* z, float* row_max = nullptr) {
  float* mx = row_max ? row_max : z;   // z holds the running maxima until the exponentials without row_max
  std::fill(mx, mx + H, -std::numeric_limits<float>::infinity());
  for (I k = k0; k < k1; ++k) {
    const float* l = el + static_cast<int64_t>(nbr[k]) * H;
    float* pk = p + (k - k0) * H;
    for (int64_t h = 0; h < H; ++h) {
      float t = l[h] + er[v * H + h];
      t = t < 0 ? t * slope : t;
      pk[h] = t;
      mx[h] = std::max(mx[h], t);
    }
  }
  for (I k = k0; k < k1; ++k) {
    float* pk = p + (k - k0) * H;
    for (int64_t h = 0; h < H; ++h) pk[h] -= mx[h];
  }
  std::fill(z, z + H, 0.f);
  for (I k = k0; k < k1; ++k) {
    float* pk = p + (k - k0) * H;
    for (int64_t h = 0; h < H; ++h) {
      pk[h] = std::exp(pk[h]);
      z[h] += pk[h];
    }
  }
}

template <typename I>
void GatForward(const float* X, const float* el, const float* er, const float* mask, const I* indptr,
                const I* nbr, const I* eid, int64_t n, int64_t H, int64_t F, float slope, float* Y) {
#pragma omp parallel
  {
    std::vector<float> p, z(H);
#pragma omp for schedule(dynamic, 64)
    for (int64_t v = 0; v < n; ++v) {
      const I k0 = indptr[v], k1 = indptr[v + 1];
      float* o = Y + v * H * F;
      std::fill(o, o + H * F, 0.f);
      if (k0 == k1) continue;
      p.resize(static_cast<size_t>((k1 - k0) * H));
      GatScores(el, er, nbr, k0, k1, v, H, slope, p.data(), z.data());
      for (int64_t h = 0; h < H; ++h) z[h] = 1.f / z[h];
      for (I k = k0; k < k1; ++k) {
        if (k + kAhead < k1) Prefetch(X + static_cast<int64_t>(nbr[k + kAhead]) * H * F, H * F);
        const float* x = X + static_cast<int64_t>(nbr[k]) * H * F;
        const float* m = mask ? mask + static_cast<int64_t>(eid[k]) * H : nullptr;
        for (int64_t h = 0; h < H; ++h) {
          const float w = p[(k - k0) * H + h] * z[h] * (m ? m[h] : 1.f);
          float* oh = o + h * F;
          const float* xh = x + h * F;
          for (int64_t f = 0; f < F; ++f) oh[f] += w * xh[f];
        }
      }
    }
  }
}

// The backward keeps per destination and head only the maximum score, the softmax sum and
// t = sum over the row of a * g (g = mask * <x[u], dy[v]>), and recomputes each edge's attention
// and score gradient from them in the pass over sources: no E x H temporaries.
template <typename I>
void GatBackward(const float* dY, const float* X, const float* el, const float* er, const float* mask,
                 const I* const* s, int64_t n_dst, int64_t n_src, int64_t H, int64_t F, float slope,
                 float* dX, float* dEl, float* dEr) {
  const I *indptr = s[0], *nbr = s[1], *eid = s[2], *rptr = s[3], *rnbr = s[4], *reid = s[5];
  std::unique_ptr<float[]> M_(new float[n_dst * H]), Z_(new float[n_dst * H]), T_(new float[n_dst * H]);
  float *M = M_.get(), *Z = Z_.get(), *T = T_.get();
  // d loss / d score of one edge and head, given its attention a and g
  auto score_grad = [&](float a, float g, float t, float pre) {
    const float ds = a * (g - t);
    return pre < 0 ? ds * slope : ds;
  };
#pragma omp parallel
  {
    std::vector<float> p, z(H), t(H), G;
#pragma omp for schedule(dynamic, 64)
    for (int64_t v = 0; v < n_dst; ++v) {
      const I k0 = indptr[v], k1 = indptr[v + 1];
      float* der = dEr ? dEr + v * H : nullptr;
      if (der) std::fill(der, der + H, 0.f);
      if (k0 == k1) continue;
      p.resize(static_cast<size_t>((k1 - k0) * H));
      G.resize(static_cast<size_t>((k1 - k0) * H));
      GatScores(el, er, nbr, k0, k1, v, H, slope, p.data(), z.data(), M + v * H);
      std::fill(t.begin(), t.end(), 0.f);
      const float* dy = dY + v * H * F;
      for (I k = k0; k < k1; ++k) {
        if (k + kAhead < k1) Prefetch(X + static_cast<int64_t>(nbr[k + kAhead]) * H * F, H * F);
        const int64_t e = eid[k];
        const float* x = X + static_cast<int64_t>(nbr[k]) * H * F;
        for (int64_t h = 0; h < H; ++h) {
          const float a = p[(k - k0) * H + h] / z[h];
          float g = 0.f;
          for (int64_t f = 0; f < F; ++f) g += x[h * F + f] * dy[h * F + f];
          g *= mask ? mask[e * H + h] : 1.f;
          G[(k - k0) * H + h] = g;
          t[h] += a * g;
        }
      }
      for (int64_t h = 0; h < H; ++h) Z[v * H + h] = z[h], T[v * H + h] = t[h];
      if (!der) continue;
      for (I k = k0; k < k1; ++k) {
        const float* l = el + static_cast<int64_t>(nbr[k]) * H;
        for (int64_t h = 0; h < H; ++h)
          der[h] += score_grad(p[(k - k0) * H + h] / z[h], G[(k - k0) * H + h], t[h], l[h] + er[v * H + h]);
      }
    }
    if (dX || dEl) {
#pragma omp for schedule(dynamic, 64)
      for (int64_t u = 0; u < n_src; ++u) {
        float* dx = dX ? dX + u * H * F : nullptr;
        float* del = dEl ? dEl + u * H : nullptr;
        if (dx) std::fill(dx, dx + H * F, 0.f);
        if (del) std::fill(del, del + H, 0.f);
        const float* x = X + u * H * F;
        const float* l = el + u * H;
        for (I k = rptr[u]; k < rptr[u + 1]; ++k) {
          if (k + kAhead < rptr[u + 1]) Prefetch(dY + static_cast<int64_t>(rnbr[k + kAhead]) * H * F, H * F);
          const int64_t v = rnbr[k], e = reid[k];
          const float* dy = dY + v * H * F;
          for (int64_t h = 0; h < H; ++h) {
            // the same float operations as GatScores, so a is bit-identical to the forward's
            float pre = l[h] + er[v * H + h];
            const float sc = pre < 0 ? pre * slope : pre;
            const float a = std::exp(sc - M[v * H + h]) / Z[v * H + h];
            const float m = mask ? mask[e * H + h] : 1.f;
            if (del) {
              float g = 0.f;
              for (int64_t f = 0; f < F; ++f) g += x[h * F + f] * dy[h * F + f];
              del[h] += score_grad(a, g * m, T[v * H + h], pre);
            }
            if (!dx) continue;
            const float w = a * m;
            for (int64_t f = 0; f < F; ++f) dx[h * F + f] += w * dy[h * F + f];
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scaled neighbour sum (GCN's aggregation with its degree normalisation folded in):
// out[v] = r[v] * sum over edges u->v of l[u] * x[u] + b, with l (N_src), r (N_dst) and b (B, the
// row length a multiple of B, b repeated along the row) each optional (attributes left, right,
// bias = "1"; a placeholder of one element otherwise). Backward, with g[u] = sum over edges u->v
// of r[v] dy[v]: dx[u] = l[u] g[u], dl[u] = <x[u], g[u]>, dr[v] = <dy[v], sum over edges u->v of
// l[u] x[u]>, db = sum over rows of dy folded to B (fixed row blocks summed in order). With
// scale_grad = "0" the scales count as constants (zero gradient): dr alone costs a second pass.
// Optionally a self term (attribute self = "1", input c of one element): out[v] += c x[v] for the
// destination nodes, which are the first N_dst source nodes (a graph, or a block's prefix rule),
// so GIN's (1 + eps) h_v + sum and its gradient dx[v] += c dy[v] need no (N, F) temporaries;
// dc = sum over v < N_dst of <x[v], dy[v]> (fixed row blocks summed in order) unless self_grad = "0".
// With halves = "1", x is (N_src, 2L): its rows are [self part | neighbour part], the sum runs over
// the neighbour halves and the self term (c, or 1 without it) reads the self halves, so that
// SAGEConv's W_self h_v + mean of W_neigh h_u comes from one product with both weights; dx gets
// c dy in the self half of the destination rows (0 elsewhere) and the sum's gradient in the other.
template <typename I>
void ScaledSumForward(const float* X, const float* l, const float* r, const float* bias, int64_t B,
                      const float* c, bool halves, const I* indptr, const I* nbr, int64_t n, int64_t L,
                      float* Y) {
  const int64_t stride = halves ? 2 * L : L;
  const float* Xn = halves ? X + L : X;   // the rows' neighbour part
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t v = 0; v < n; ++v) {
    float* o = Y + v * L;
    const I k0 = indptr[v], k1 = indptr[v + 1];
    if (l)
      GatherSum(Xn, nbr, k0, k1, L, [&](I k) { return l[nbr[k]]; }, o, stride);
    else
      GatherSum(Xn, nbr, k0, k1, L, Unit(), o, stride);
    if (r) {
      const float s = r[v];
      for (int64_t j = 0; j < L; ++j) o[j] *= s;
    }
    if (bias)
      for (int64_t j0 = 0; j0 < L; j0 += B)
        for (int64_t j = 0; j < B; ++j) o[j0 + j] += bias[j];
    if (c || halves) {
      const float a = c ? c[0] : 1.f;
      const float* x = X + v * stride;
      for (int64_t j = 0; j < L; ++j) o[j] += a * x[j];
    }
  }
}

template <typename I>
void ScaledSumBackward(const float* dY, const float* X, const float* l, const float* r, int64_t B,
                       const float* c, bool halves, const I* const* s, int64_t n_dst, int64_t n_src, int64_t L,
                       float* dX, float* dl, float* dr, float* db, float* dc) {
  const I *indptr = s[0], *nbr = s[1], *rptr = s[3], *rnbr = s[4];
  const int64_t stride = halves ? 2 * L : L;
  const float* Xn = halves ? X + L : X;   // the rows' neighbour part
  if (dX || dl) {
#pragma omp parallel
    {
      std::vector<float> buf(L);
#pragma omp for schedule(dynamic, 64)
      for (int64_t u = 0; u < n_src; ++u) {
        // g accumulates in dX's row (its neighbour half) and is scaled by l[u] in place at the end
        float* g = dX ? dX + u * stride + (halves ? L : 0) : buf.data();
        if (r)
          GatherSum(dY, rnbr, rptr[u], rptr[u + 1], L, [&](I k) { return r[rnbr[k]]; }, g);
        else
          GatherSum(dY, rnbr, rptr[u], rptr[u + 1], L, Unit(), g);
        if (dl) {
          const float* x = Xn + u * stride;
          float acc = 0.f;
          for (int64_t j = 0; j < L; ++j) acc += x[j] * g[j];
          dl[u] = acc;
        }
        if (dX && l) {
          const float sc = l[u];
          for (int64_t j = 0; j < L; ++j) g[j] *= sc;
        }
        if (dX && halves) {   // the self half: c dy for a destination row, 0 otherwise
          float* d = dX + u * stride;
          const float a = c ? c[0] : 1.f;
          const float* dy = dY + u * L;
          if (u < n_dst)
            for (int64_t j = 0; j < L; ++j) d[j] = a * dy[j];
          else
            std::fill(d, d + L, 0.f);
        } else if (dX && c && u < n_dst) {
          const float a = c[0];
          const float* dy = dY + u * L;
          for (int64_t j = 0; j < L; ++j) g[j] += a * dy[j];
        }
      }
    }
  }
  if (dr) {
#pragma omp parallel
    {
      std::vector<float> agg(L);
#pragma omp for schedule(dynamic, 64)
      for (int64_t v = 0; v < n_dst; ++v) {
        std::fill(agg.begin(), agg.end(), 0.f);
        for (I k = indptr[v]; k < indptr[v + 1]; ++k) {
          const int64_t u = nbr[k];
          const float* x = Xn + u * stride;
          const float sc = l ? l[u] : 1.f;
          for (int64_t j = 0; j < L; ++j) agg[j] += sc * x[j];
        }
        const float* dy = dY + v * L;
        float acc = 0.f;
        for (int64_t j = 0; j < L; ++j) acc += dy[j] * agg[j];
        dr[v] = acc;
      }
    }
  }
  if (db) {
    // per block of rows, then the blocks in order: the same sum whatever the thread count
    const int64_t kRows = 1024, blocks = (n_dst + kRows - 1) / kRows;
    std::vector<float> part(static_cast<size_t>(std::max<int64_t>(blocks, 1) * B), 0.f);
#pragma omp parallel for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      float* p = part.data() + blk * B;
      const int64_t v1 = std::min(n_dst, (blk + 1) * kRows);
      for (int64_t v = blk * kRows; v < v1; ++v) {
        const float* dy = dY + v * L;
        for (int64_t j0 = 0; j0 < L; j0 += B)
          for (int64_t j = 0; j < B; ++j) p[j] += dy[j0 + j];
      }
    }
    std::fill(db, db + B, 0.f);
    for (int64_t blk = 0; blk < blocks; ++blk)
      for (int64_t j = 0; j < B; ++j) db[j] += part[blk * B + j];
  }
  if (dc) {
    const int64_t kRows = 1024, blocks = (n_dst + kRows - 1) / kRows;
    std::vector<double> part(static_cast<size_t>(std::max<int64_t>(blocks, 1)), 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      double acc = 0.0;
      const int64_t v1 = std::min(n_dst, (blk + 1) * kRows);
      for (int64_t v = blk * kRows; v < v1; ++v) {
        const float *dy = dY + v * L, *x = X + v * stride;
        float row = 0.f;
        for (int64_t j = 0; j < L; ++j) row += x[j] * dy[j];
        acc += row;
      }
      part[blk] = acc;
    }
    double total = 0.0;
    for (int64_t blk = 0; blk < blocks; ++blk) total += part[blk];
    dc[0] = static_cast<float>(total);
  }
}

// ---------------------------------------------------------------------------------------------
// Glue to MXNet: attribute parsing, shapes, types and the dispatch on the index type.

struct Kind {
  enum { kSpmm, kSddmm, kSoftmax, kGat, kScaled } which;
  int data;  // data inputs before the structure
};

const Kind kSpmmKind{Kind::kSpmm, 2}, kSddmmKind{Kind::kSddmm, 2}, kSoftmaxKind{Kind::kSoftmax, 1},
    kGatKind{Kind::kGat, 4}, kScaledKind{Kind::kScaled, 5};

template <const Kind* K>
MXReturnValue ParseAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  *num_in = K->data + kStructure;
  *num_out = 1;
  if (K->which == Kind::kSpmm || K->which == Kind::kSddmm) {
    Op op;
    if (!ParseOp(Get(attrs, "op", ""), &op)) {
      MX_ERROR_MSG << "unknown op '" << Get(attrs, "op", "") << "'";
      return MX_FAIL;
    }
    Reduce r;
    if (K->which == Kind::kSpmm && (!ParseReduce(Get(attrs, "reduce", "sum"), &r) || op == kDot)) {
      MX_ERROR_MSG << "gSpMM takes add/sub/mul/div/copy_lhs/copy_rhs with sum/mean/max/min";
      return MX_FAIL;
    }
  }
  return MX_SUCCESS;
}

template <const Kind* K>
MXReturnValue InferType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  const int idx = in->at(K->data);
  if (idx != mxnet::ext::kInt32 && idx != mxnet::ext::kInt64) {
    MX_ERROR_MSG << "graph structure must be int32 or int64";
    return MX_FAIL;
  }
  for (int i = 0; i < K->data; ++i) {
    if (in->at(i) != mxnet::ext::kFloat32) {
      MX_ERROR_MSG << "graph kernels take float32 features (input " << i << ")";
      return MX_FAIL;
    }
  }
  for (int i = K->data; i < K->data + kStructure; ++i) {
    if (in->at(i) != idx) {
      MX_ERROR_MSG << "all structure tensors must share one integer type";
      return MX_FAIL;
    }
  }
  out->at(0) = mxnet::ext::kFloat32;
  return MX_SUCCESS;
}

std::vector<int64_t> ToI64(const std::vector<unsigned int>& s) { return std::vector<int64_t>(s.begin(), s.end()); }

template <const Kind* K>
MXReturnValue InferShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  const auto& st = *in;
  const int64_t n_dst = static_cast<int64_t>(st[K->data][0]) - 1;
  const int64_t E = st[K->data + 6][0];
  std::vector<int64_t> shape;
  if (K->which == Kind::kSoftmax) {
    out->at(0) = st[0];
    return MX_SUCCESS;
  }
  if (K->which == Kind::kGat) {
    out->at(0) = {static_cast<unsigned>(n_dst), st[0][1], st[0][2]};
    return MX_SUCCESS;
  }
  if (K->which == Kind::kScaled) {
    const int64_t n_src = static_cast<int64_t>(st[K->data + 3][0]) - 1;
    const bool halves = Flag(attrs, "halves");
    if (halves && (st[0].size() != 2 || st[0][1] % 2 != 0)) {
      MX_ERROR_MSG << "scaled sum: halves needs (rows, 2 L) features";
      return MX_FAIL;
    }
    const int64_t L = Prod(RowShape(ToI64(st[0]))) / (halves ? 2 : 1);
    const int64_t B = Prod(ToI64(st[3]));
    if (static_cast<int64_t>(st[0][0]) != n_src) {
      MX_ERROR_MSG << "scaled sum: features have " << st[0][0] << " rows for " << n_src << " source nodes";
      return MX_FAIL;
    }
    if (Flag(attrs, "left") && Prod(ToI64(st[1])) != n_src) {
      MX_ERROR_MSG << "scaled sum: the left scale needs one value per source node (" << n_src << ")";
      return MX_FAIL;
    }
    if (Flag(attrs, "right") && Prod(ToI64(st[2])) != n_dst) {
      MX_ERROR_MSG << "scaled sum: the right scale needs one value per destination node (" << n_dst << ")";
      return MX_FAIL;
    }
    if (Flag(attrs, "bias") && (B == 0 || L % B != 0)) {
      MX_ERROR_MSG << "scaled sum: the bias length " << B << " does not divide the row length " << L;
      return MX_FAIL;
    }
    if ((Flag(attrs, "self") && Prod(ToI64(st[4])) != 1) || ((Flag(attrs, "self") || halves) && n_dst > n_src)) {
      MX_ERROR_MSG << "scaled sum: the self term needs one scale and no more destination than source nodes";
      return MX_FAIL;
    }
    std::vector<unsigned int> o(st[0]);
    o[0] = static_cast<unsigned>(n_dst);
    if (halves) o[1] = static_cast<unsigned>(L);
    out->at(0) = o;
    return MX_SUCCESS;
  }
  Op op = kAdd;
  ParseOp(Get(attrs, "op", ""), &op);
  const bool same = K->which == Kind::kSddmm && Flag(attrs, "same");
  Bcast b;
  std::string err;
  if (!b.Init(RowShape(ToI64(st[0])), RowShape(ToI64(st[same ? 0 : 1])), op, &err)) {
    MX_ERROR_MSG << err;
    return MX_FAIL;
  }
  std::vector<unsigned int> o{static_cast<unsigned>(K->which == Kind::kSpmm ? n_dst : E)};
  for (int64_t d : b.shape) o.push_back(static_cast<unsigned>(d));
  out->at(0) = o;
  return MX_SUCCESS;
}

template <typename I>
void Structure(std::vector<MXTensor>* t, int first, const I* s[kStructure]) {
  for (int i = 0; i < kStructure; ++i) s[i] = t->at(first + i).data<I>();
}

int64_t Rows(const MXTensor& t) { return t.shape.empty() ? 0 : t.shape[0]; }

template <typename I>
MXReturnValue SpmmFwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  Op op = kAdd;
  Reduce red = kSum;
  ParseOp(Get(attrs, "op", ""), &op);
  ParseReduce(Get(attrs, "reduce", "sum"), &red);
  Bcast b;
  std::string err;
  if (!b.Init(RowShape(in->at(0).shape), RowShape(in->at(1).shape), op, &err)) {
    MX_ERROR_MSG << err;
    return MX_FAIL;
  }
  const I* s[kStructure];
  Structure<I>(in, 2, s);
  GS_WITH_OP(op, (SpmmForward<I, O>(b, red, in->at(0).data<float>(), in->at(1).data<float>(), s[0], s[1], s[2],
                                    Rows(in->at(2)) - 1, out->at(0).data<float>())));
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue SpmmBwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  // in: dY, lhs, rhs, structure x 8, Y; out: dlhs, drhs, (structure gradients, left alone)
  Op op = kAdd;
  Reduce red = kSum;
  ParseOp(Get(attrs, "op", ""), &op);
  ParseReduce(Get(attrs, "reduce", "sum"), &red);
  Bcast b;
  std::string err;
  if (!b.Init(RowShape(in->at(1).shape), RowShape(in->at(2).shape), op, &err)) {
    MX_ERROR_MSG << err;
    return MX_FAIL;
  }
  const I* s[kStructure];
  Structure<I>(in, 3, s);
  float* dX = Bad(out->at(0)) ? nullptr : out->at(0).data<float>();
  float* dW = Bad(out->at(1)) ? nullptr : out->at(1).data<float>();
  // the placeholder of a copy gets a zero gradient
  if (op == kCopyR && dX) std::memset(dX, 0, sizeof(float) * out->at(0).size()), dX = nullptr;
  if (op == kCopyL && dW) std::memset(dW, 0, sizeof(float) * out->at(1).size()), dW = nullptr;
  GS_WITH_OP(op, (SpmmBackward<I, O>(b, red, in->at(0).data<float>(), in->at(1).data<float>(),
                                     in->at(2).data<float>(), in->at(11).data<float>(), s, Rows(in->at(3)) - 1,
                                     Rows(in->at(6)) - 1, dX, dW)));
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue SddmmFwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  Op op = kAdd;
  ParseOp(Get(attrs, "op", ""), &op);
  const bool same = Flag(attrs, "same");   // one operand on both sides; the second input unused
  Bcast b;
  std::string err;
  if (!b.Init(RowShape(in->at(0).shape), RowShape(in->at(same ? 0 : 1).shape), op, &err)) {
    MX_ERROR_MSG << err;
    return MX_FAIL;
  }
  const I* s[kStructure];
  Structure<I>(in, 2, s);
  const char lt = Get(attrs, "lhs_target", "u")[0], rt = Get(attrs, "rhs_target", "v")[0];
  GS_WITH_OP(op, (SddmmForward<I, O>(b, lt, rt, in->at(0).data<float>(), in->at(same ? 0 : 1).data<float>(), s[6],
                                     s[7], Rows(in->at(8)), out->at(0).data<float>())));
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue SddmmBwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  Op op = kAdd;
  ParseOp(Get(attrs, "op", ""), &op);
  const bool same = Flag(attrs, "same");
  Bcast b;
  std::string err;
  if (!b.Init(RowShape(in->at(1).shape), RowShape(in->at(same ? 1 : 2).shape), op, &err)) {
    MX_ERROR_MSG << err;
    return MX_FAIL;
  }
  const I* s[kStructure];
  Structure<I>(in, 3, s);
  const char lt = Get(attrs, "lhs_target", "u")[0], rt = Get(attrs, "rhs_target", "v")[0];
  const int64_t E = Rows(in->at(9));
  if (same) {
    // one operand x on both sides (node targets u and v): its gradient is the sum of the two
    // sides' gradients, the second side added into the first's rows; the unused input gets 0
    const float* x = in->at(1).data<float>();
    if (!Bad(out->at(1))) std::memset(out->at(1).data<float>(), 0, sizeof(float) * out->at(1).size());
    if (Bad(out->at(0))) return MX_SUCCESS;
    float* dx = out->at(0).data<float>();
    const int64_t rows = Rows(out->at(0));
    GS_WITH_OP(op, (SddmmBackwardSide<I, O, 0>(b, lt, rt, in->at(0).data<float>(), x, x, s, E, rows, dx)));
    GS_WITH_OP(op, (SddmmBackwardSide<I, O, 1>(b, lt, rt, in->at(0).data<float>(), x, x, s, E, rows, dx, true)));
    return MX_SUCCESS;
  }
  for (int side = 0; side < 2; ++side) {
    if (Bad(out->at(side))) continue;
    if ((side == 0 && op == kCopyR) || (side == 1 && op == kCopyL)) {
      std::memset(out->at(side).data<float>(), 0, sizeof(float) * out->at(side).size());
      continue;
    }
    if (side == 0)
      GS_WITH_OP(op, (SddmmBackwardSide<I, O, 0>(b, lt, rt, in->at(0).data<float>(), in->at(1).data<float>(),
                                                 in->at(2).data<float>(), s, E, Rows(out->at(side)),
                                                 out->at(side).data<float>())))
    else
      GS_WITH_OP(op, (SddmmBackwardSide<I, O, 1>(b, lt, rt, in->at(0).data<float>(), in->at(1).data<float>(),
                                                 in->at(2).data<float>(), s, E, Rows(out->at(side)),
                                                 out->at(side).data<float>())))
  }
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue SoftmaxFwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  const I* s[kStructure];
  Structure<I>(in, 1, s);
  const int64_t E = Rows(in->at(0));
  const int64_t L = E ? in->at(0).size() / E : 0;
  SoftmaxForward<I>(in->at(0).data<float>(), s[0], s[2], Rows(in->at(1)) - 1, L, out->at(0).data<float>());
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue SoftmaxBwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  // in: dY, S, structure x 8, A
  const I* s[kStructure];
  Structure<I>(in, 2, s);
  const int64_t E = Rows(in->at(1));
  const int64_t L = E ? in->at(1).size() / E : 0;
  if (!Bad(out->at(0)))
    SoftmaxBackward<I>(in->at(0).data<float>(), in->at(10).data<float>(), s[0], s[2], Rows(in->at(2)) - 1, L,
                       out->at(0).data<float>());
  return MX_SUCCESS;
}

float Slope(const Attrs& attrs) { return std::stof(Get(attrs, "slope", "0.2")); }
bool Masked(const Attrs& attrs) { return Get(attrs, "masked", "0") == "1"; }

template <typename I>
MXReturnValue GatFwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  const I* s[kStructure];
  Structure<I>(in, 4, s);
  MXTensor& x = in->at(0);
  GatForward<I>(x.data<float>(), in->at(1).data<float>(), in->at(2).data<float>(),
                Masked(attrs) ? in->at(3).data<float>() : nullptr, s[0], s[1], s[2], Rows(in->at(4)) - 1,
                x.shape[1], x.shape[2], Slope(attrs), out->at(0).data<float>());
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue GatBwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  // in: dY, x, el, er, mask, structure x 8, Y
  const I* s[kStructure];
  Structure<I>(in, 5, s);
  MXTensor& x = in->at(1);
  auto ptr = [&](int i) { return Bad(out->at(i)) ? nullptr : out->at(i).data<float>(); };
  GatBackward<I>(in->at(0).data<float>(), x.data<float>(), in->at(2).data<float>(), in->at(3).data<float>(),
                 Masked(attrs) ? in->at(4).data<float>() : nullptr, s, Rows(in->at(5)) - 1, Rows(in->at(8)) - 1,
                 x.shape[1], x.shape[2], Slope(attrs), ptr(0), ptr(1), ptr(2));
  if (float* dm = ptr(3)) std::memset(dm, 0, sizeof(float) * out->at(3).size());
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue ScaledFwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  // in: x, left, right, bias, self scale, structure x 8
  const I* s[kStructure];
  Structure<I>(in, 5, s);
  MXTensor& x = in->at(0);
  const bool halves = Flag(attrs, "halves");
  const int64_t N = Rows(x), L = (N ? x.size() / N : Prod(RowShape(x.shape))) / (halves ? 2 : 1);
  auto opt = [&](int i, const char* flag) { return Flag(attrs, flag) ? in->at(i).data<float>() : nullptr; };
  ScaledSumForward<I>(x.data<float>(), opt(1, "left"), opt(2, "right"), opt(3, "bias"), in->at(3).size(),
                      opt(4, "self"), halves, s[0], s[1], Rows(in->at(5)) - 1, L, out->at(0).data<float>());
  return MX_SUCCESS;
}

template <typename I>
MXReturnValue ScaledBwdT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  // in: dY, x, left, right, bias, self scale, structure x 8, Y; out: dx, dleft, dright, dbias, dself
  const I* s[kStructure];
  Structure<I>(in, 6, s);
  MXTensor& x = in->at(1);
  const bool halves = Flag(attrs, "halves");
  const int64_t N = Rows(x), L = (N ? x.size() / N : Prod(RowShape(x.shape))) / (halves ? 2 : 1);
  const char* flags[5] = {nullptr, "left", "right", "bias", "self"};
  float* d[5];
  for (int i = 0; i < 5; ++i) {
    d[i] = Bad(out->at(i)) ? nullptr : out->at(i).data<float>();
    // a placeholder, or a scale the caller declared constant (scale_grad=0 / self_grad=0; MXNet
    // does not tell an operator which gradients are wanted): zero gradient, no work
    const bool constant = ((i == 1 || i == 2) && Get(attrs, "scale_grad", "1") == "0") ||
                          (i == 4 && Get(attrs, "self_grad", "1") == "0");
    if (d[i] && i > 0 && (!Flag(attrs, flags[i]) || constant)) {
      std::memset(d[i], 0, sizeof(float) * out->at(i).size());
      d[i] = nullptr;
    }
  }
  auto opt = [&](int i, const char* flag) { return Flag(attrs, flag) ? in->at(i).data<float>() : nullptr; };
  ScaledSumBackward<I>(in->at(0).data<float>(), x.data<float>(), opt(2, "left"), opt(3, "right"), in->at(4).size(),
                       opt(5, "self"), halves, s, Rows(in->at(6)) - 1, Rows(in->at(9)) - 1, L, d[0], d[1], d[2], d[3],
                       d[4]);
  return MX_SUCCESS;
}

// Dispatch on the index type of the structure (input `first`).
#define GS_DISPATCH(NAME, IMPL, FIRST)                                                               \
  MXReturnValue NAME(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,    \
                     const OpResource& res) {                                                        \
    if (in->at(FIRST).dtype == mxnet::ext::kInt32) return IMPL<int32_t>(attrs, in, out);              \
    return IMPL<int64_t>(attrs, in, out);                                                            \
  }

GS_DISPATCH(SpmmFwd, SpmmFwdT, 2)
GS_DISPATCH(SpmmBwd, SpmmBwdT, 3)
GS_DISPATCH(SddmmFwd, SddmmFwdT, 2)
GS_DISPATCH(SddmmBwd, SddmmBwdT, 3)
GS_DISPATCH(SoftmaxFwd, SoftmaxFwdT, 1)
GS_DISPATCH(SoftmaxBwd, SoftmaxBwdT, 2)
GS_DISPATCH(GatFwd, GatFwdT, 4)
GS_DISPATCH(GatBwd, GatBwdT, 5)
GS_DISPATCH(ScaledFwd, ScaledFwdT, 5)
GS_DISPATCH(ScaledBwd, ScaledBwdT, 6)

}  // namespace

REGISTER_OP(gs_gspmm)
    .setForward(SpmmFwd, "cpu")
    .setBackward(SpmmBwd, "cpu")
    .setParseAttrs(ParseAttrs<&kSpmmKind>)
    .setInferType(InferType<&kSpmmKind>)
    .setInferShape(InferShape<&kSpmmKind>);

REGISTER_OP(gs_gsddmm)
    .setForward(SddmmFwd, "cpu")
    .setBackward(SddmmBwd, "cpu")
    .setParseAttrs(ParseAttrs<&kSddmmKind>)
    .setInferType(InferType<&kSddmmKind>)
    .setInferShape(InferShape<&kSddmmKind>);

REGISTER_OP(gs_edge_softmax)
    .setForward(SoftmaxFwd, "cpu")
    .setBackward(SoftmaxBwd, "cpu")
    .setParseAttrs(ParseAttrs<&kSoftmaxKind>)
    .setInferType(InferType<&kSoftmaxKind>)
    .setInferShape(InferShape<&kSoftmaxKind>);

REGISTER_OP(gs_gat_attention)
    .setForward(GatFwd, "cpu")
    .setBackward(GatBwd, "cpu")
    .setParseAttrs(ParseAttrs<&kGatKind>)
    .setInferType(InferType<&kGatKind>)
    .setInferShape(InferShape<&kGatKind>);

REGISTER_OP(gs_scaled_sum)
    .setForward(ScaledFwd, "cpu")
    .setBackward(ScaledBwd, "cpu")
    .setParseAttrs(ParseAttrs<&kScaledKind>)
    .setInferType(InferType<&kScaledKind>)
    .setInferShape(InferShape<&kScaledKind>);

MXReturnValue initialize(int version) {
  if (version < 10900) {
    MX_ERROR_MSG << "gluon_suite graph kernels need MXNet >= 1.9 (found " << version << ")";
    return MX_FAIL;
  }
  return MX_SUCCESS;
}
