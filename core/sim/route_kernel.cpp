// routeKernel in two versions: portable 4-wide GCC vectors and 8-wide AVX2 intrinsics. Both walk
// the layer's counts (16-bit) once, eight sources at a time: pass 1 reads the eight rows (contiguous),
// adds them to the per-expert totals and writes the keep rows 1 - c/T transposed into
// expert-major order (8 x 8 with AVX2, two 4 x 4 halves otherwise); the replicas' keep rows
// follow; pass 2 multiplies, per destination GPU, the keep rows of its slots.
#include "sim/route_kernel.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MOEX_ROUTE_X86 1
#endif

namespace moex::detail {

namespace {

using Count = RouteKernelIn::Count;

const Count* sourceRow(const RouteKernelIn& in, int src)
{
    return src < in.G ? in.counts + static_cast<std::size_t>(src) * static_cast<std::size_t>(in.E) : in.zero_row;
}

void startKernel(const RouteKernelIn& in, const RouteKernelOut& out)
{
    std::fill(out.totals, out.totals + in.E, 0);
    std::fill(out.rep_acc, out.rep_acc + static_cast<std::size_t>(in.R) * kRouteBlock, 0.0f);
}

// Each replica's sum over the eight lanes (sources s, s + 8, ...), in lane order.
void finishReplicas(const RouteKernelIn& in, const RouteKernelOut& out)
{
    for (int rep = 0; rep < in.R; ++rep) {
        double sum = 0;
        for (int b = 0; b < kRouteBlock; ++b)
            sum += out.rep_acc[static_cast<std::size_t>(rep) * kRouteBlock + static_cast<std::size_t>(b)];
        out.rep_taken[rep] = static_cast<float>(sum);
    }
}

// S when every GPU has S >= 1 slots (laid out GPU by GPU), else 0.
int uniformSlotsPerGpu(const RouteKernelIn& in)
{
    const int S = in.G > 0 ? in.gpu_slot_begin[1] - in.gpu_slot_begin[0] : 0;
    for (int g = 0; g < in.G; ++g)
        if (in.gpu_slot_begin[g] != g * S || in.gpu_slot_begin[g + 1] - in.gpu_slot_begin[g] != S)
            return 0;
    return S;
}

}  // namespace

bool compactFractions(std::span<const float> dense, FractionTable& table, std::vector<std::uint8_t>& index)
{
    std::array<std::uint32_t, kFractionTable> bits{};
    int n = 0;
    auto find = [&](std::uint32_t b) {
        int k = 0;
        while (k < n && bits[static_cast<std::size_t>(k)] != b)
            ++k;
        return k;
    };
    for (const float f : dense) {
        std::uint32_t b = 0;
        std::memcpy(&b, &f, sizeof b);
        if (find(b) < n)
            continue;
        if (n == kFractionTable)
            return false;
        bits[static_cast<std::size_t>(n++)] = b;
    }
    table.fill(0.0f);
    for (int k = 0; k < n; ++k)
        std::memcpy(&table[static_cast<std::size_t>(k)], &bits[static_cast<std::size_t>(k)], sizeof(float));
    index.resize(dense.size());
    for (std::size_t i = 0; i < dense.size(); ++i) {
        std::uint32_t b = 0;
        std::memcpy(&b, &dense[i], sizeof b);
        index[i] = static_cast<std::uint8_t>(find(b));
    }
    return true;
}

void routeKernelPortable(const RouteKernelIn& in, const RouteKernelOut& out)
{
    using V4 = float __attribute__((vector_size(16)));
    using V4i = std::int32_t __attribute__((vector_size(16)));
    using V4c = Count __attribute__((vector_size(4 * sizeof(Count))));
    const int G = in.G, E = in.E, R = in.R;
    startKernel(in, out);
    std::int32_t* totals = out.totals;
    float* keep = out.keep;
    V4* keepV = reinterpret_cast<V4*>(keep);  // row k: keepV[2k] sources 0-3, keepV[2k+1] sources 4-7
    V4* accV = reinterpret_cast<V4*>(out.rep_acc);
    const V4 one = {1, 1, 1, 1};
    const V4 invT = {in.inv_tokens, in.inv_tokens, in.inv_tokens, in.inv_tokens};
    const int E4 = E - E % 4;
    for (int src0 = 0; src0 < G; src0 += kRouteBlock) {
        const int block = src0 / kRouteBlock;
        for (int half = 0; half < 2; ++half) {
            const Count* row[4];
            for (int b = 0; b < 4; ++b)
                row[b] = sourceRow(in, src0 + half * 4 + b);
            for (int e = 0; e < E4; e += 4) {
                V4c n0, n1, n2, n3;
                std::memcpy(&n0, row[0] + e, sizeof n0);
                std::memcpy(&n1, row[1] + e, sizeof n1);
                std::memcpy(&n2, row[2] + e, sizeof n2);
                std::memcpy(&n3, row[3] + e, sizeof n3);
                const V4i c0 = __builtin_convertvector(n0, V4i), c1 = __builtin_convertvector(n1, V4i);
                const V4i c2 = __builtin_convertvector(n2, V4i), c3 = __builtin_convertvector(n3, V4i);
                V4i t;
                std::memcpy(&t, totals + e, sizeof t);
                t += (c0 + c1) + (c2 + c3);
                std::memcpy(totals + e, &t, sizeof t);
                const V4 f0 = one - __builtin_convertvector(c0, V4) * invT;
                const V4 f1 = one - __builtin_convertvector(c1, V4) * invT;
                const V4 f2 = one - __builtin_convertvector(c2, V4) * invT;
                const V4 f3 = one - __builtin_convertvector(c3, V4) * invT;
                const V4 a = __builtin_shuffle(f0, f1, V4i{0, 4, 1, 5});
                const V4 b = __builtin_shuffle(f2, f3, V4i{0, 4, 1, 5});
                const V4 c = __builtin_shuffle(f0, f1, V4i{2, 6, 3, 7});
                const V4 d = __builtin_shuffle(f2, f3, V4i{2, 6, 3, 7});
                keepV[2 * (e + 0) + half] = __builtin_shuffle(a, b, V4i{0, 1, 4, 5});
                keepV[2 * (e + 1) + half] = __builtin_shuffle(a, b, V4i{2, 3, 6, 7});
                keepV[2 * (e + 2) + half] = __builtin_shuffle(c, d, V4i{0, 1, 4, 5});
                keepV[2 * (e + 3) + half] = __builtin_shuffle(c, d, V4i{2, 3, 6, 7});
            }
            for (int e = E4; e < E; ++e)
                for (int b = 0; b < 4; ++b) {
                    totals[e] += row[b][e];
                    keep[static_cast<std::size_t>(e) * kRouteBlock + static_cast<std::size_t>(half * 4 + b)] =
                        1.0f - static_cast<float>(row[b][e]) * in.inv_tokens;
                }
        }
        // Replica r takes fraction f of what each source sends to its expert: its keep row is
        // 1 - f (1 - keep[expert]).
        for (int rep = 0; rep < R; ++rep) {
            const int e = in.rep_expert[rep];
            const std::size_t at = (static_cast<std::size_t>(block) * R + static_cast<std::size_t>(rep)) * kRouteBlock;
            V4 flo, fhi;
            if (in.fraction_index) {
                const std::uint8_t* ix = in.fraction_index + at;
                for (int b = 0; b < 4; ++b) {
                    flo[b] = in.fraction_table[ix[b]];
                    fhi[b] = in.fraction_table[ix[4 + b]];
                }
            } else {
                std::memcpy(&flo, in.rep_fraction + at, sizeof flo);
                std::memcpy(&fhi, in.rep_fraction + at + 4, sizeof fhi);
            }
            const V4 takenLo = (one - keepV[2 * e]) * flo;
            const V4 takenHi = (one - keepV[2 * e + 1]) * fhi;
            keepV[2 * (E + rep)] = one - takenLo;
            keepV[2 * (E + rep) + 1] = one - takenHi;
            accV[2 * rep] += takenLo;
            accV[2 * rep + 1] += takenHi;
        }
        // Pass 2: the product of the keep rows of every slot on GPU g (per pair: 1 - n + their sum).
        float* notSent = out.not_sent + static_cast<std::size_t>(block) * static_cast<std::size_t>(G) * kRouteBlock;
        for (int g = 0; g < G; ++g) {
            V4 lo = one, hi = one;
            if (in.per_pair) {
                lo = V4{};
                hi = V4{};
                for (int k = in.gpu_slot_begin[g]; k < in.gpu_slot_begin[g + 1]; ++k) {
                    const int r = in.slot_keep[k];
                    lo += keepV[2 * r];
                    hi += keepV[2 * r + 1];
                }
                const float base = 1.0f - static_cast<float>(in.gpu_slot_begin[g + 1] - in.gpu_slot_begin[g]);
                const V4 b = {base, base, base, base};
                lo = b + lo;
                hi = b + hi;
            } else {
                for (int k = in.gpu_slot_begin[g]; k < in.gpu_slot_begin[g + 1]; ++k) {
                    const int r = in.slot_keep[k];
                    lo *= keepV[2 * r];
                    hi *= keepV[2 * r + 1];
                }
            }
            std::memcpy(notSent + static_cast<std::size_t>(g) * kRouteBlock, &lo, sizeof lo);
            std::memcpy(notSent + static_cast<std::size_t>(g) * kRouteBlock + 4, &hi, sizeof hi);
        }
    }
    finishReplicas(in, out);
}

void sendTotalsPortable(const SendTotals& a)
{
    using V4 = float __attribute__((vector_size(16)));
    const int blocks = (a.G + kRouteBlock - 1) / kRouteBlock;
    const std::size_t stride = static_cast<std::size_t>(a.G) * kRouteBlock;
    const V4 t = {a.tokens, a.tokens, a.tokens, a.tokens};
    std::fill(a.out, a.out + static_cast<std::size_t>(blocks) * kRouteBlock, 0.0f);
    for (int dst = 0; dst < a.G; ++dst) {
        V4 inLo = {}, inHi = {};
        for (int blk = 0; blk < blocks; ++blk) {
            const std::size_t at = static_cast<std::size_t>(blk) * stride + static_cast<std::size_t>(dst) * kRouteBlock;
            for (int half = 0; half < 2; ++half) {
                V4 v, sent, o;
                std::memcpy(&v, a.not_sent + at + half * 4, sizeof v);
                std::memcpy(&sent, a.sent_sum + at + half * 4, sizeof sent);
                std::memcpy(&o, a.out + blk * kRouteBlock + half * 4, sizeof o);
                const V4 u = t * (1.0f - v);
                sent += u;
                o += u;
                std::memcpy(a.sent_sum + at + half * 4, &sent, sizeof sent);
                std::memcpy(a.out + blk * kRouteBlock + half * 4, &o, sizeof o);
                (half == 0 ? inLo : inHi) += u;
            }
        }
        a.in[dst] += ((inLo[0] + inLo[1]) + (inLo[2] + inLo[3])) + ((inHi[0] + inHi[1]) + (inHi[2] + inHi[3]));
    }
}

#ifdef MOEX_ROUTE_X86

__attribute__((target("avx2"), always_inline)) inline __m256 keepRow(const float* keep, int k)
{
    return _mm256_load_ps(keep + static_cast<std::size_t>(k) * kRouteBlock);
}

// No fused multiply-add (target "avx2" alone): the same roundings as the portable version.
__attribute__((target("avx2"))) void routeKernelAvx2(const RouteKernelIn& in, const RouteKernelOut& out)
{
    const int G = in.G, E = in.E, R = in.R;
    startKernel(in, out);
    std::int32_t* totals = out.totals;
    float* keep = out.keep;
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 invT = _mm256_set1_ps(in.inv_tokens);
    const int E8 = E - E % 8;
    // Locals, not in.*: stores through __m256 (a may_alias type) would make the compiler reload them.
    const int* slotKeep = in.slot_keep;
    const int* gpuBegin = in.gpu_slot_begin;
    const int slotsPerGpu = uniformSlotsPerGpu(in);
    const int* repExpert = in.rep_expert;
    float* repAcc = out.rep_acc;
    const bool compact = in.fraction_index != nullptr;
    const __m256 table = compact ? _mm256_loadu_ps(in.fraction_table) : one;
    for (int src0 = 0; src0 < G; src0 += kRouteBlock) {
        const int block = src0 / kRouteBlock;
        // The block's replica shares (R x 8 bytes or floats) are read after pass 1; fetch them now.
        const std::size_t shares = static_cast<std::size_t>(block) * static_cast<std::size_t>(R) * kRouteBlock;
        const float* fractions = compact ? nullptr : in.rep_fraction + shares;
        const std::uint8_t* indices = compact ? in.fraction_index + shares : nullptr;
        const char* sharesAt = compact ? reinterpret_cast<const char*>(indices) : reinterpret_cast<const char*>(fractions);
        const std::size_t shareBytes = static_cast<std::size_t>(R) * kRouteBlock * (compact ? 1 : sizeof(float));
        for (std::size_t off = 0; off < shareBytes; off += 64)
            _mm_prefetch(sharesAt + off, _MM_HINT_T0);
        const Count* row[8];
        for (int b = 0; b < 8; ++b)
            row[b] = sourceRow(in, src0 + b);
        // The next block's rows (8 E counts, contiguous) are fetched while this one is worked on:
        // 8 x 8 counts (two cache lines) per iteration of eight experts.
        const char* next = src0 + kRouteBlock < G ? reinterpret_cast<const char*>(sourceRow(in, src0 + kRouteBlock))
                                                  : reinterpret_cast<const char*>(in.prefetch_next);
        for (int e = 0; e < E8; e += 8) {
            if (next) {
                static_assert(sizeof(Count) == 2, "two cache lines per iteration");
                const char* p = next + static_cast<std::size_t>(e) * 8 * sizeof(Count);
                _mm_prefetch(p, _MM_HINT_T0);
                _mm_prefetch(p + 64, _MM_HINT_T0);
            }
            __m256i c[8];
            for (int b = 0; b < 8; ++b)
                c[b] = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[b] + e)));
            const __m256i s01 = _mm256_add_epi32(c[0], c[1]), s23 = _mm256_add_epi32(c[2], c[3]);
            const __m256i s45 = _mm256_add_epi32(c[4], c[5]), s67 = _mm256_add_epi32(c[6], c[7]);
            __m256i t = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(totals + e));
            t = _mm256_add_epi32(t, _mm256_add_epi32(_mm256_add_epi32(s01, s23), _mm256_add_epi32(s45, s67)));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(totals + e), t);
            __m256 f[8];
            for (int b = 0; b < 8; ++b)
                f[b] = _mm256_sub_ps(one, _mm256_mul_ps(_mm256_cvtepi32_ps(c[b]), invT));
            // 8 x 8 transpose: f[b][j] (source b, expert e + j) -> keep row e + j, lane b.
            const __m256 t0 = _mm256_unpacklo_ps(f[0], f[1]), t1 = _mm256_unpackhi_ps(f[0], f[1]);
            const __m256 t2 = _mm256_unpacklo_ps(f[2], f[3]), t3 = _mm256_unpackhi_ps(f[2], f[3]);
            const __m256 t4 = _mm256_unpacklo_ps(f[4], f[5]), t5 = _mm256_unpackhi_ps(f[4], f[5]);
            const __m256 t6 = _mm256_unpacklo_ps(f[6], f[7]), t7 = _mm256_unpackhi_ps(f[6], f[7]);
            const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float* k = keep + static_cast<std::size_t>(e) * kRouteBlock;
            _mm256_store_ps(k + 0 * 8, _mm256_permute2f128_ps(u0, u4, 0x20));
            _mm256_store_ps(k + 1 * 8, _mm256_permute2f128_ps(u1, u5, 0x20));
            _mm256_store_ps(k + 2 * 8, _mm256_permute2f128_ps(u2, u6, 0x20));
            _mm256_store_ps(k + 3 * 8, _mm256_permute2f128_ps(u3, u7, 0x20));
            _mm256_store_ps(k + 4 * 8, _mm256_permute2f128_ps(u0, u4, 0x31));
            _mm256_store_ps(k + 5 * 8, _mm256_permute2f128_ps(u1, u5, 0x31));
            _mm256_store_ps(k + 6 * 8, _mm256_permute2f128_ps(u2, u6, 0x31));
            _mm256_store_ps(k + 7 * 8, _mm256_permute2f128_ps(u3, u7, 0x31));
        }
        for (int e = E8; e < E; ++e)
            for (int b = 0; b < 8; ++b) {
                totals[e] += row[b][e];
                keep[static_cast<std::size_t>(e) * kRouteBlock + static_cast<std::size_t>(b)] =
                    1.0f - static_cast<float>(row[b][e]) * in.inv_tokens;
            }
        for (int rep = 0; rep < R; ++rep) {
            const int e = repExpert[rep];
            const __m256 frac =
                compact ? _mm256_permutevar8x32_ps(table, _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(
                              indices + static_cast<std::size_t>(rep) * kRouteBlock))))
                        : _mm256_loadu_ps(fractions + static_cast<std::size_t>(rep) * kRouteBlock);
            const __m256 taken = _mm256_mul_ps(_mm256_sub_ps(one, _mm256_load_ps(keep + static_cast<std::size_t>(e) * kRouteBlock)), frac);
            _mm256_store_ps(keep + static_cast<std::size_t>(E + rep) * kRouteBlock, _mm256_sub_ps(one, taken));
            float* acc = repAcc + static_cast<std::size_t>(rep) * kRouteBlock;
            _mm256_store_ps(acc, _mm256_add_ps(_mm256_load_ps(acc), taken));
        }
        float* notSent = out.not_sent + static_cast<std::size_t>(block) * static_cast<std::size_t>(G) * kRouteBlock;
        int g = 0;
        if (in.per_pair) {
            // 1 - n + the sum of the n keep rows (summed in slot order, as the portable version).
            for (; g < G; ++g) {
                __m256 p = _mm256_setzero_ps();
                for (int k = gpuBegin[g]; k < gpuBegin[g + 1]; ++k)
                    p = _mm256_add_ps(p, keepRow(keep, slotKeep[k]));
                const __m256 base = _mm256_set1_ps(1.0f - static_cast<float>(gpuBegin[g + 1] - gpuBegin[g]));
                _mm256_storeu_ps(notSent + static_cast<std::size_t>(g) * kRouteBlock, _mm256_add_ps(base, p));
            }
        }
        if (slotsPerGpu > 0) {
            // Every GPU has S slots: four GPUs' products at a time, so that their multiply chains
            // overlap (one GPU's chain alone waits on each multiply's latency).
            const int S = slotsPerGpu;
            for (; g + 4 <= G; g += 4) {
                const int* k = slotKeep + static_cast<std::ptrdiff_t>(g) * S;
                __m256 p0 = keepRow(keep, k[0]), p1 = keepRow(keep, k[S]), p2 = keepRow(keep, k[2 * S]), p3 = keepRow(keep, k[3 * S]);
                for (int j = 1; j < S; ++j) {
                    p0 = _mm256_mul_ps(p0, keepRow(keep, k[j]));
                    p1 = _mm256_mul_ps(p1, keepRow(keep, k[S + j]));
                    p2 = _mm256_mul_ps(p2, keepRow(keep, k[2 * S + j]));
                    p3 = _mm256_mul_ps(p3, keepRow(keep, k[3 * S + j]));
                }
                float* o = notSent + static_cast<std::size_t>(g) * kRouteBlock;
                _mm256_storeu_ps(o, p0);
                _mm256_storeu_ps(o + 8, p1);
                _mm256_storeu_ps(o + 16, p2);
                _mm256_storeu_ps(o + 24, p3);
            }
        }
        for (; g < G; ++g) {
            __m256 p = one;
            for (int k = gpuBegin[g]; k < gpuBegin[g + 1]; ++k)
                p = _mm256_mul_ps(p, keepRow(keep, slotKeep[k]));
            _mm256_storeu_ps(notSent + static_cast<std::size_t>(g) * kRouteBlock, p);
        }
    }
    finishReplicas(in, out);
}

__attribute__((target("avx2"))) void sendTotalsAvx2(const SendTotals& a)
{
    const int blocks = (a.G + kRouteBlock - 1) / kRouteBlock;
    const std::size_t stride = static_cast<std::size_t>(a.G) * kRouteBlock;
    const __m256 t = _mm256_set1_ps(a.tokens);
    const __m256 one = _mm256_set1_ps(1.0f);
    std::fill(a.out, a.out + static_cast<std::size_t>(blocks) * kRouteBlock, 0.0f);
    const float* notSent = a.not_sent;
    float* sentSum = a.sent_sum;
    float* out = a.out;
    for (int dst = 0; dst < a.G; ++dst) {
        __m256 in = _mm256_setzero_ps();
        for (int blk = 0; blk < blocks; ++blk) {
            const std::size_t at = static_cast<std::size_t>(blk) * stride + static_cast<std::size_t>(dst) * kRouteBlock;
            const __m256 u = _mm256_mul_ps(t, _mm256_sub_ps(one, _mm256_loadu_ps(notSent + at)));
            _mm256_storeu_ps(sentSum + at, _mm256_add_ps(_mm256_loadu_ps(sentSum + at), u));
            _mm256_storeu_ps(out + blk * kRouteBlock, _mm256_add_ps(_mm256_loadu_ps(out + blk * kRouteBlock), u));
            in = _mm256_add_ps(in, u);
        }
        // The portable version's order: ((0+1)+(2+3)) + ((4+5)+(6+7)).
        alignas(32) float l[8];
        _mm256_store_ps(l, in);
        a.in[dst] += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
}

bool routeKernelHasAvx2()
{
    static const bool has = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return has;
}

#else

void routeKernelAvx2(const RouteKernelIn& in, const RouteKernelOut& out) { routeKernelPortable(in, out); }
void sendTotalsAvx2(const SendTotals& a) { sendTotalsPortable(a); }
bool routeKernelHasAvx2() { return false; }

#endif

void routeKernel(const RouteKernelIn& in, const RouteKernelOut& out)
{
    if (routeKernelHasAvx2())
        routeKernelAvx2(in, out);
    else
        routeKernelPortable(in, out);
}

void sendTotals(const SendTotals& a)
{
    if (routeKernelHasAvx2())
        sendTotalsAvx2(a);
    else
        sendTotalsPortable(a);
}

}  // namespace moex::detail
