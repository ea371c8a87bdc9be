// A stand-in for <metal_stdlib> so that generated Metal Shading Language can be type-checked
// by a plain C++17 compiler (`clang++ -x c++ -std=c++17 -fsyntax-only`) where no Metal
// toolchain exists.
//
// What this check sees: C++ syntax, declarations before use, types of every expression
// (struct members, pointer/reference types, implicit conversions), arity and argument types
// of the Metal functions declared below, and that kernel parameters carry attributes.
//
// What it cannot see:
// - address spaces: `device`, `threadgroup`, `thread` and `constant` are empty macros here,
//   so passing a `threadgroup` pointer where a `device` one is expected goes unnoticed;
// - attribute meaning: `[[kernel]]`, `[[buffer(n)]]` and the thread-position attributes are
//   swallowed (clang warns about unknown attributes; the test turns that warning off), so
//   duplicate buffer indices or a wrong attribute type are not detected;
// - Metal-only rules: no recursion, no function pointers, threadgroup variables only at
//   kernel scope, the MSL version a function needs (atomic_float needs MSL 3.0, simd_*
//   needs MSL 2.0 and an Apple GPU family);
// - overloads missing from this shim's simplified signatures (math is declared for float and
//   int only, since Metal has no double and the generator refuses float64).
#pragma once

#define device
#define threadgroup
#define thread
#define constant const

namespace metal {
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
typedef unsigned char uchar;

struct uint3 {
    uint x, y, z;
};

enum class mem_flags : int { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }
enum memory_order { memory_order_relaxed, memory_order_seq_cst };
enum thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };

void threadgroup_barrier(mem_flags flags);
void atomic_thread_fence(mem_flags flags, memory_order order, thread_scope scope);

template <typename T> struct _atomic { T value; };
typedef _atomic<int> atomic_int;
typedef _atomic<uint> atomic_uint;
typedef _atomic<float> atomic_float;

template <typename T> T atomic_fetch_add_explicit(_atomic<T>* object, T operand, memory_order order);
template <typename T> T atomic_fetch_sub_explicit(_atomic<T>* object, T operand, memory_order order);
template <typename T> T atomic_fetch_min_explicit(_atomic<T>* object, T operand, memory_order order);
template <typename T> T atomic_fetch_max_explicit(_atomic<T>* object, T operand, memory_order order);
template <typename T> T atomic_fetch_and_explicit(_atomic<T>* object, T operand, memory_order order);
template <typename T> T atomic_fetch_or_explicit(_atomic<T>* object, T operand, memory_order order);
template <typename T> T atomic_fetch_xor_explicit(_atomic<T>* object, T operand, memory_order order);
template <typename T> T atomic_exchange_explicit(_atomic<T>* object, T desired, memory_order order);
template <typename T>
bool atomic_compare_exchange_weak_explicit(_atomic<T>* object, T* expected, T desired, memory_order success,
                                           memory_order failure);

struct simd_vote {
    typedef ulong vote_t;
    explicit operator vote_t() const;
};
template <typename T> T simd_shuffle(T data, ushort lane);
template <typename T> T simd_shuffle_down(T data, ushort delta);
template <typename T> T simd_shuffle_up(T data, ushort delta);
template <typename T> T simd_shuffle_xor(T data, ushort mask);
bool simd_all(bool expr);
bool simd_any(bool expr);
simd_vote simd_ballot(bool expr);

#define METAL_UNARY(name) float name(float x);
METAL_UNARY(sqrt) METAL_UNARY(rsqrt) METAL_UNARY(exp) METAL_UNARY(exp2) METAL_UNARY(log)
METAL_UNARY(log2) METAL_UNARY(log10) METAL_UNARY(sin) METAL_UNARY(cos) METAL_UNARY(tan)
METAL_UNARY(asin) METAL_UNARY(acos) METAL_UNARY(atan) METAL_UNARY(sinh) METAL_UNARY(cosh)
METAL_UNARY(tanh) METAL_UNARY(floor) METAL_UNARY(ceil) METAL_UNARY(round) METAL_UNARY(trunc)
METAL_UNARY(fabs)
#undef METAL_UNARY
float pow(float x, float y);
float atan2(float y, float x);
float copysign(float x, float y);
float fmin(float x, float y);
float fmax(float x, float y);
float fmod(float x, float y);
float fma(float a, float b, float c);
bool isinf(float x);
bool isnan(float x);
int abs(int x);
long abs(long x);
int min(int x, int y);
int max(int x, int y);
long min(long x, long y);
long max(long x, long y);
int clz(int x);
int popcount(int x);
float min(float x, float y);
float max(float x, float y);
} // namespace metal

#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
