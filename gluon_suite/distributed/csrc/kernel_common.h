// What every operator file of the compression library shares: MXNet's extension types, the
// attribute readers, element counts, the 2^31-byte limit of one buffer and the copy an in-place
// operator makes when MXNet hands it another output array. Defined in an unnamed namespace, so each
// file keeps its own internal copy, as before they were shared.
#ifndef GLUON_SUITE_DISTRIBUTED_KERNEL_COMMON_H_
#define GLUON_SUITE_DISTRIBUTED_KERNEL_COMMON_H_

#include <cstdint>
#include <cstring>
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

const int64_t kMaxBytes = int64_t(1) << 31;   // the largest buffer an operator takes
const int64_t kChunk = 1 << 16;               // elements per chunk of the parallel loops

std::string Get(const Attrs& a, const char* key, const char* fallback) {
  auto it = a.find(key);
  return it == a.end() ? std::string(fallback) : it->second;
}

int64_t GetInt(const Attrs& a, const char* key, int64_t fallback) {
  auto it = a.find(key);
  return it == a.end() ? fallback : std::stoll(it->second);
}

float GetFloat(const Attrs& a, const char* key, float fallback) {
  auto it = a.find(key);
  return it == a.end() ? fallback : std::stof(it->second);
}

double GetDouble(const Attrs& a, const char* key, double fallback) {
  auto it = a.find(key);
  return it == a.end() ? fallback : std::stod(it->second);   // Python's repr: read back exactly
}

int64_t Numel(const std::vector<unsigned int>& s) {
  int64_t n = 1;
  for (unsigned int d : s) n *= d;
  return n;
}

int64_t Numel(const MXTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

template <typename T>
T* Data(const MXTensor& t) { return static_cast<T*>(t.data_ptr); }

// true (with MXNet's error set, one line) when n elements of itemsize bytes exceed kMaxBytes
bool TooLarge(int64_t n, int64_t itemsize, const char* op, const char* what = "buffer") {
  if (n * itemsize > kMaxBytes) {
    MX_ERROR_MSG << op << ": a " << what << " of " << n * itemsize << " bytes is larger than 2^31 bytes";
    return true;
  }
  return false;
}

int64_t Chunks(int64_t n) { return (n + kChunk - 1) / kChunk; }

// Whether the processor runs the AVX-512 paths (checked once; the build assumes no more than x86-64)
#if defined(__x86_64__)
bool HasAVX512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("popcnt");
  return has;
}
#else
bool HasAVX512() { return false; }
#endif

// An operator called with its input as its output (MXNet's out=) works in place; given another
// output array it first copies the input there.
void Alias(const MXTensor& in, MXTensor* out, int64_t bytes) {
  if (out->data_ptr != in.data_ptr && bytes) std::memcpy(out->data_ptr, in.data_ptr, bytes);
}

}  // namespace

#endif  // GLUON_SUITE_DISTRIBUTED_KERNEL_COMMON_H_
