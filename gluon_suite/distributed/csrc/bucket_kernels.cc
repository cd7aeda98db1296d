// Whole-bucket kernels of gluon_suite.distributed (built into the same library as
// comm_kernels.cc): the per-member work of a step in one call per bucket instead of one per
// tensor. CPU, float32 data; copies split into runs of at most kChunk elements, so every result is
// the same whatever the number of threads.
//
//   gs_members_gather(w_1, ..., w_m; members)   -> flat (sum of the sizes): the members one after
//                                                  another, each in its C order (out=the bucket's
//                                                  work vector)
//   gs_members_scatter(flat; shapes)           -> w_1, ..., w_m: each member its slice of flat
//                                                  (out=the members' own arrays)
//     shapes: the members' shapes, "d0xd1x...;d0x..." (';' between members)
//   gs_cser_delta(u, e, w_1, ..., w_m; members, gather) -> u, e[, x]: the CSER step's dense
//                                                  bookkeeping in one pass, w the members one after
//                                                  another: u <- u - w, then e <- e - u (out=u, e);
//                                                  gather=1 also copies w into x (a third output)
//   gs_members_block_add(vals, blocks, w_1, ..., w_m; members, alpha) -> w_1, ..., w_m: each block
//     (rows of (origin, rows, row length, row stride) in the members' flat order, as gs_block_add
//     takes them; a row may run on from one member into the next) += alpha * its part of vals,
//     in the members' own arrays (out=the members; nothing else of them is written)
//
// and one host function, called through ctypes (no MXNet array involved: it runs on the host
// before the payload's operators are pushed):
//
//   gs_grbs_rows(m, seed, words, plans, geometry, rows, total) -> how many members take part:
//     GRBS's per-member draws and slabs for one bucket at one step. For member j, words[j] is
//     step * 1000003 + key_j; the three uniforms are the first three doubles of NumPy's
//     Generator(Philox(key=[seed, words[j]])).random(3) (Philox4x64-10, counter starting at 1,
//     (x >> 11) * 2^-53), so the selection is the compressor's bit for bit. plans[5j..]: k0, n0,
//     k1, n1 (as doubles) and the participation probability p; geometry[4j..]: offset in the
//     bucket, d0, d1 (0 for a one-axis member), inner (elements per (row, column) cell). A member
//     taking part writes its slab (origin, rows, row length, row stride) to rows[4i..], i counting
//     the participating members in bucket order; *total gets their elements.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernel_common.h"


namespace {


int64_t Members(const Attrs& attrs) {
  auto it = attrs.find("members");
  return it == attrs.end() ? 0 : std::stoll(it->second);
}

// "2x3;5;7x1x1" -> {{2, 3}, {5}, {7, 1, 1}}; false on anything else
bool ParseShapes(const Attrs& attrs, Shapes* out) {
  auto it = attrs.find("shapes");
  if (it == attrs.end() || it->second.empty()) return false;
  out->assign(1, {});
  uint64_t d = 0;
  bool digits = false;
  for (char c : it->second) {
    if (c >= '0' && c <= '9') {
      d = d * 10 + static_cast<uint64_t>(c - '0');
      digits = true;
      if (d > 0xffffffffu) return false;
    } else if (c == 'x' || c == ';') {
      if (!digits) return false;
      out->back().push_back(static_cast<unsigned int>(d));
      d = 0, digits = false;
      if (c == ';') out->emplace_back();
    } else {
      return false;
    }
  }
  if (!digits) return false;
  out->back().push_back(static_cast<unsigned int>(d));
  return true;
}

struct Run {
  int64_t member, at, len;   // len elements of a member from its element `at`
};

// The members' elements in runs of at most kChunk, each with its place in the flat vector.
void Runs(const std::vector<int64_t>& sizes, std::vector<Run>* runs, std::vector<int64_t>* flat_at) {
  int64_t off = 0;
  for (int64_t j = 0; j < static_cast<int64_t>(sizes.size()); ++j) {
    for (int64_t o = 0; o < sizes[j]; o += kChunk) {
      runs->push_back({j, o, std::min(kChunk, sizes[j] - o)});
      flat_at->push_back(off + o);
    }
    off += sizes[j];
  }
}

MXReturnValue GatherForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                            const OpResource& res) {
  std::vector<int64_t> sizes;
  for (const MXTensor& t : *in) sizes.push_back(Numel(t));
  std::vector<Run> runs;
  std::vector<int64_t> at;
  Runs(sizes, &runs, &at);
  float* flat = static_cast<float*>(out->at(0).data_ptr);
  const int64_t R = static_cast<int64_t>(runs.size());
#pragma omp parallel for schedule(dynamic, 4) if (R > 1)
  for (int64_t r = 0; r < R; ++r) {
    const float* src = static_cast<const float*>(in->at(runs[r].member).data_ptr) + runs[r].at;
    std::memcpy(flat + at[r], src, runs[r].len * 4);
  }
  return MX_SUCCESS;
}

MXReturnValue ScatterForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                             const OpResource& res) {
  std::vector<int64_t> sizes;
  for (const MXTensor& t : *out) sizes.push_back(Numel(t));
  std::vector<Run> runs;
  std::vector<int64_t> at;
  Runs(sizes, &runs, &at);
  const float* flat = static_cast<const float*>(in->at(0).data_ptr);
  const int64_t R = static_cast<int64_t>(runs.size());
#pragma omp parallel for schedule(dynamic, 4) if (R > 1)
  for (int64_t r = 0; r < R; ++r) {
    float* dst = static_cast<float*>(out->at(runs[r].member).data_ptr) + runs[r].at;
    std::memcpy(dst, flat + at[r], runs[r].len * 4);
  }
  return MX_SUCCESS;
}

MXReturnValue GatherAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  const int64_t m = Members(attrs);
  if (m < 1) {
    MX_ERROR_MSG << "gs_members_gather: members must be >= 1";
    return MX_FAIL;
  }
  *num_in = static_cast<int>(m);
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue ScatterAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  Shapes shapes;
  if (!ParseShapes(attrs, &shapes)) {
    MX_ERROR_MSG << "gs_members_scatter: shapes must read 'd0xd1...;d0...' (one shape per member)";
    return MX_FAIL;
  }
  *num_in = 1;
  *num_out = static_cast<int>(shapes.size());
  return MX_SUCCESS;
}

MXReturnValue Float32(const char* op, std::vector<int>* in, std::vector<int>* out) {
  for (size_t i = 0; i < in->size(); ++i) {
    if (in->at(i) != mxnet::ext::kFloat32) {
      MX_ERROR_MSG << op << ": input " << i << " must be float32";
      return MX_FAIL;
    }
  }
  for (int& t : *out) t = mxnet::ext::kFloat32;
  return MX_SUCCESS;
}

MXReturnValue GatherType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  return Float32("gs_members_gather", in, out);
}

MXReturnValue ScatterType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  return Float32("gs_members_scatter", in, out);
}

MXReturnValue GatherShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  int64_t n = 0;
  for (const auto& s : *in) n += Numel(s);
  if (TooLarge(n, 4, "gs_members_gather", "bucket")) return MX_FAIL;
  out->at(0) = {static_cast<unsigned int>(n)};
  return MX_SUCCESS;
}

MXReturnValue ScatterShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  Shapes shapes;
  ParseShapes(attrs, &shapes);
  int64_t n = 0;
  for (const auto& s : shapes) n += Numel(s);
  if (TooLarge(n, 4, "gs_members_scatter", "bucket")) return MX_FAIL;
  if (Numel(in->at(0)) != n) {
    MX_ERROR_MSG << "gs_members_scatter: the flat vector has " << Numel(in->at(0)) << " elements, the members "
                 << n;
    return MX_FAIL;
  }
  for (size_t j = 0; j < shapes.size(); ++j) out->at(j) = shapes[j];
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// The CSER step's dense bookkeeping and its block additions, on the members' own arrays.

MXReturnValue CserDeltaForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                               const OpResource& res) {
  const int64_t n = Numel(in->at(0));
  std::vector<int64_t> sizes;
  for (size_t j = 2; j < in->size(); ++j) sizes.push_back(Numel(in->at(j)));
  std::vector<Run> runs;
  std::vector<int64_t> at;
  Runs(sizes, &runs, &at);
  Alias(in->at(0), &out->at(0), n * 4);
  Alias(in->at(1), &out->at(1), n * 4);
  float* u = static_cast<float*>(out->at(0).data_ptr);
  float* e = static_cast<float*>(out->at(1).data_ptr);
  float* x = out->size() > 2 ? static_cast<float*>(out->at(2).data_ptr) : nullptr;
  const int64_t R = static_cast<int64_t>(runs.size());
#pragma omp parallel for schedule(dynamic, 4) if (R > 1)
  for (int64_t r = 0; r < R; ++r) {
    const float* w = static_cast<const float*>(in->at(2 + runs[r].member).data_ptr) + runs[r].at;
    float* ur = u + at[r];
    float* er = e + at[r];
    if (x) std::memcpy(x + at[r], w, runs[r].len * 4);
    for (int64_t i = 0; i < runs[r].len; ++i) {
      const float d = ur[i] - w[i];
      ur[i] = d;
      er[i] -= d;
    }
  }
  return MX_SUCCESS;
}

struct Piece {
  int64_t member, at, src, len;   // len elements of a member from its element `at`; vals from `src`
};

// Each block row's elements as runs of at most kChunk inside one member; false (with the error
// set) for a row past the members' end.
template <typename I>
bool BlockPieces(const MXTensor& blocks, const std::vector<int64_t>& start, int64_t* total,
                 std::vector<Piece>* pieces) {
  const int64_t m = blocks.shape.empty() ? 0 : blocks.shape[0], n = start.back();
  const I* b = static_cast<const I*>(blocks.data_ptr);
  int64_t src = 0;
  for (int64_t j = 0; j < m; ++j) {
    const int64_t origin = b[4 * j], rows = b[4 * j + 1], len = b[4 * j + 2], stride = b[4 * j + 3];
    if (rows < 0 || len < 0 || origin < 0 || stride < 0 || (rows > 0 && len > 0 && origin + (rows - 1) * stride + len > n)) {
      MX_ERROR_MSG << "gs_members_block_add: block " << j << " (origin " << origin << ", " << rows << " x " << len
                   << ", stride " << stride << ") reaches past the members' " << n << " elements";
      return false;
    }
    if (len == 0) continue;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t o = origin + r * stride, left = len;
      int64_t k = std::upper_bound(start.begin(), start.end(), o) - start.begin() - 1;
      while (left > 0) {   // a row over the end of a member goes on in the next (empty ones skipped)
        while (start[k + 1] <= o) ++k;
        const int64_t c = std::min({kChunk, left, start[k + 1] - o});
        pieces->push_back({k, o - start[k], src, c});
        src += c, o += c, left -= c;
      }
    }
  }
  *total = src;
  return true;
}

template <typename I>
MXReturnValue MembersBlockAddT(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out) {
  const size_t m = out->size();
  std::vector<int64_t> start(m + 1, 0);
  for (size_t j = 0; j < m; ++j) start[j + 1] = start[j] + Numel(out->at(j));
  std::vector<Piece> pieces;
  int64_t total = 0;
  if (!BlockPieces<I>(in->at(1), start, &total, &pieces)) return MX_FAIL;
  if (total != Numel(in->at(0))) {
    MX_ERROR_MSG << "gs_members_block_add: the blocks hold " << total << " elements, the values " << Numel(in->at(0));
    return MX_FAIL;
  }
  for (size_t j = 0; j < m; ++j) Alias(in->at(2 + j), &out->at(j), Numel(out->at(j)) * 4);
  const float alpha = GetFloat(attrs, "alpha", 1.f);
  const float* v = static_cast<const float*>(in->at(0).data_ptr);
  const int64_t P = static_cast<int64_t>(pieces.size());
  // the blocks of a bucket do not overlap (each member's own slab): every element is written once
#pragma omp parallel for schedule(dynamic, 16) if (total > kChunk)
  for (int64_t p = 0; p < P; ++p) {
    float* d = static_cast<float*>(out->at(pieces[p].member).data_ptr) + pieces[p].at;
    const float* s = v + pieces[p].src;
    for (int64_t e = 0; e < pieces[p].len; ++e) d[e] += alpha * s[e];
  }
  return MX_SUCCESS;
}

MXReturnValue MembersBlockAddForward(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                                     const OpResource& res) {
  if (in->at(1).dtype == mxnet::ext::kInt32) return MembersBlockAddT<int32_t>(attrs, in, out);
  return MembersBlockAddT<int64_t>(attrs, in, out);
}

MXReturnValue MembersAttrs(const char* op, int extra, int outs, const Attrs& attrs, int* num_in, int* num_out) {
  const int64_t m = Members(attrs);
  if (m < 1) {
    MX_ERROR_MSG << op << ": members must be >= 1";
    return MX_FAIL;
  }
  *num_in = static_cast<int>(m) + extra;
  *num_out = outs ? outs : static_cast<int>(m);
  return MX_SUCCESS;
}

MXReturnValue CserDeltaAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  return MembersAttrs("gs_cser_delta", 2, Get(attrs, "gather", "0") == "1" ? 3 : 2, attrs, num_in, num_out);
}

MXReturnValue BlockAddAttrs(const Attrs& attrs, int* num_in, int* num_out) {
  return MembersAttrs("gs_members_block_add", 2, 0, attrs, num_in, num_out);
}

MXReturnValue CserDeltaType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  return Float32("gs_cser_delta", in, out);
}

MXReturnValue BlockAddType(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  for (size_t i = 0; i < in->size(); ++i) {
    const int t = in->at(i);
    const bool ok = i == 1 ? (t == mxnet::ext::kInt32 || t == mxnet::ext::kInt64) : t == mxnet::ext::kFloat32;
    if (!ok) {
      MX_ERROR_MSG << "gs_members_block_add: input " << i << " must be " << (i == 1 ? "int32 or int64" : "float32");
      return MX_FAIL;
    }
  }
  for (int& t : *out) t = mxnet::ext::kFloat32;
  return MX_SUCCESS;
}

MXReturnValue CserDeltaShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  const int64_t n = Numel(in->at(0));
  int64_t members = 0;
  for (size_t j = 2; j < in->size(); ++j) members += Numel(in->at(j));
  if (TooLarge(std::max(n, members), 4, "gs_cser_delta", "bucket")) return MX_FAIL;
  if (Numel(in->at(1)) != n || members != n) {
    MX_ERROR_MSG << "gs_cser_delta: u has " << n << " elements, e " << Numel(in->at(1)) << ", the members " << members;
    return MX_FAIL;
  }
  for (size_t o = 0; o < out->size(); ++o) out->at(o) = in->at(o ? 1 : 0);
  return MX_SUCCESS;
}

MXReturnValue BlockAddShape(const Attrs& attrs, Shapes* in, Shapes* out) {
  int64_t members = 0;
  for (size_t j = 2; j < in->size(); ++j) members += Numel(in->at(j));
  if (TooLarge(members, 4, "gs_members_block_add", "bucket")) return MX_FAIL;
  const auto& b = in->at(1);
  if (b.size() != 2 || b[1] != 4) {
    MX_ERROR_MSG << "gs_members_block_add: blocks must be (m, 4): origin, rows, row length, row stride";
    return MX_FAIL;
  }
  for (size_t j = 2; j < in->size(); ++j) out->at(j - 2) = in->at(j);
  return MX_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Philox4x64-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), as NumPy's
// Philox bit generator runs it: the first block is computed from the counter (1, 0, 0, 0).

inline uint64_t MulHiLo(uint64_t a, uint64_t b, uint64_t* hi) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  *hi = static_cast<uint64_t>(p >> 64);
  return static_cast<uint64_t>(p);
}

void Philox4x64(uint64_t k0, uint64_t k1, uint64_t out[4]) {
  uint64_t c[4] = {1, 0, 0, 0};
  for (int round = 0; round < 10; ++round) {
    if (round) k0 += 0x9E3779B97F4A7C15ULL, k1 += 0xBB67AE8584CAA73BULL;
    uint64_t hi0, hi1;
    const uint64_t lo0 = MulHiLo(0xD2E7470EE14C6C93ULL, c[0], &hi0);
    const uint64_t lo1 = MulHiLo(0xCA5A826395121157ULL, c[2], &hi1);
    const uint64_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0, c[1] = lo1, c[2] = n2, c[3] = lo0;
  }
  std::memcpy(out, c, sizeof(c));
}

inline double Uniform(uint64_t x) { return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0); }

}  // namespace

extern "C" int64_t gs_grbs_rows(int64_t m, uint64_t seed, const uint64_t* words, const double* plans,
                                const int64_t* geometry, int64_t* rows, int64_t* total) {
  int64_t count = 0, sum = 0;
  for (int64_t j = 0; j < m; ++j) {
    const double* pl = plans + 5 * j;
    const int64_t* g = geometry + 4 * j;
    uint64_t x[4];
    Philox4x64(seed, words[j], x);
    if (!(Uniform(x[0]) < pl[4])) continue;   // u0 >= p: the member sits this step out
    const int64_t k0 = static_cast<int64_t>(pl[0]), n0 = static_cast<int64_t>(pl[1]);
    const int64_t k1 = static_cast<int64_t>(pl[2]), n1 = static_cast<int64_t>(pl[3]);
    const int64_t offset = g[0], d0 = g[1], d1 = g[2], inner = g[3];
    const int64_t i0 = std::min(static_cast<int64_t>(Uniform(x[1]) * static_cast<double>(n0)), n0 - 1) * k0;
    const int64_t e0 = std::min(i0 + k0, d0);
    int64_t* row = rows + 4 * count++;
    if (d1 == 0) {
      row[0] = offset + i0 * inner, row[1] = 1, row[2] = (e0 - i0) * inner, row[3] = 0;
    } else {
      const int64_t i1 = std::min(static_cast<int64_t>(Uniform(x[2]) * static_cast<double>(n1)), n1 - 1) * k1;
      const int64_t e1 = std::min(i1 + k1, d1);
      row[0] = offset + (i0 * d1 + i1) * inner, row[1] = e0 - i0, row[2] = (e1 - i1) * inner, row[3] = d1 * inner;
    }
    sum += row[1] * row[2];
  }
  *total = sum;
  return count;
}

REGISTER_OP(gs_members_gather)
    .setForward(GatherForward, "cpu")
    .setParseAttrs(GatherAttrs)
    .setInferType(GatherType)
    .setInferShape(GatherShape);

REGISTER_OP(gs_members_scatter)
    .setForward(ScatterForward, "cpu")
    .setParseAttrs(ScatterAttrs)
    .setInferType(ScatterType)
    .setInferShape(ScatterShape);

REGISTER_OP(gs_cser_delta)
    .setForward(CserDeltaForward, "cpu")
    .setParseAttrs(CserDeltaAttrs)
    .setInferType(CserDeltaType)
    .setInferShape(CserDeltaShape);

REGISTER_OP(gs_members_block_add)
    .setForward(MembersBlockAddForward, "cpu")
    .setParseAttrs(BlockAddAttrs)
    .setInferType(BlockAddType)
    .setInferShape(BlockAddShape);
