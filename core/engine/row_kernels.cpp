#include "engine/row_kernels.h"

#include "engine/moe_layer.h"
#include "engine/row_kernels_amx.h"
#include "engine/row_kernels_bf16.h"
#include "engine/row_kernels_simd.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace moex::engine {

namespace {

constexpr int kBlockedMinTokens = 32;  // from here on, the blocked tiles (row_kernels_simd.cpp)

void rowDotsPortable(const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y,
                     std::vector<float>& scratch)
{
    scratch.resize(static_cast<std::size_t>(w.cols()));
    w.dequantRow(r, scratch.data());
    for (int t = 0; t < n; ++t)
        y[t] = dot(scratch.data(), x + static_cast<std::size_t>(t) * ldx, w.cols());
}

}  // namespace

const char* toString(Kernel k)
{
    switch (k) {
    case Kernel::portable: return "portable";
    case Kernel::avx2: return "avx2+fma";
    case Kernel::avx512: return "avx512";
    case Kernel::avx512bf16: return "avx512-bf16";
    case Kernel::amx: return "amx-bf16";
    }
    return "?";
}

bool kernelFromString(const std::string& name, Kernel& out)
{
    // "avx2" is the name MOEX_KERNEL and --kernel document; "avx2+fma" is how reports print it.
    for (Kernel k : {Kernel::portable, Kernel::avx2, Kernel::avx512, Kernel::avx512bf16, Kernel::amx})
        if (name == toString(k) || (k == Kernel::avx2 && name == "avx2")) {
            out = k;
            return true;
        }
    return false;
}

bool kernelSupported(Kernel k)
{
    switch (k) {
    case Kernel::portable: return true;
    case Kernel::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case Kernel::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    case Kernel::avx512bf16:
        return kernelSupported(Kernel::avx512) && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16")
            && __builtin_cpu_supports("avx512vbmi");  // fp8's byte lookups (Zen 4 on, Sapphire Rapids on)
    // The tiles, with avx512-bf16's conversions of the weights and the tokens.
    case Kernel::amx: return kernelSupported(Kernel::avx512bf16) && detail::amxUsable();
    }
    return false;
}

Kernel bestKernel()
{
    if (kernelSupported(Kernel::amx))
        return Kernel::amx;
    if (kernelSupported(Kernel::avx512bf16))
        return Kernel::avx512bf16;
    if (kernelSupported(Kernel::avx512))
        return Kernel::avx512;
    if (kernelSupported(Kernel::avx2))
        return Kernel::avx2;
    return Kernel::portable;
}

namespace {

Kernel initialKernel()
{
    Kernel k = bestKernel();
    if (const char* name = std::getenv("MOEX_KERNEL"); name && *name) {
        Kernel asked;
        if (!kernelFromString(name, asked))
            std::fprintf(stderr, "moex: MOEX_KERNEL=%s is none of portable, avx2, avx512, avx512-bf16, amx-bf16; using %s\n", name, toString(k));
        else if (!kernelSupported(asked))
            std::fprintf(stderr, "moex: MOEX_KERNEL=%s does not run on this CPU; using %s\n", name, toString(k));
        else
            k = asked;
    }
    return k;
}

std::atomic<Kernel>& kernelChoice()
{
    static std::atomic<Kernel> chosen{initialKernel()};
    return chosen;
}

// The float32 kernel that stands in for k on a matrix it does not round to bf16.
Kernel float32Kernel(Kernel k)
{
    return k == Kernel::avx512bf16 || k == Kernel::amx ? Kernel::avx512 : k;
}

}  // namespace

Kernel activeKernel()
{
    return kernelChoice().load(std::memory_order_relaxed);
}

void useKernel(Kernel k)
{
    if (!kernelSupported(k))
        throw std::invalid_argument(std::string("kernel ") + toString(k) + " does not run on this CPU");
    kernelChoice().store(k, std::memory_order_relaxed);
}

bool roundsToBf16(Kernel k, const QuantMatrix& w)
{
    return (k == Kernel::avx512bf16 || k == Kernel::amx) && detail::bf16KernelFits(w.format(), w.cols()) && kernelSupported(k);
}

Kernel kernelFor(Kernel k, const QuantMatrix& w)
{
    return (k == Kernel::avx512bf16 || k == Kernel::amx) && !roundsToBf16(k, w) ? float32Kernel(k) : k;
}

std::size_t TokenPanel::packedSize(int n, int cols)
{
    return static_cast<std::size_t>((n + kPackedTokens - 1) / kPackedTokens) * kPackedTokens * static_cast<std::size_t>(cols);
}

const float* TokenPanel::packed()
{
    if (m_packedStore == nullptr && m_n > 0) {
        if (m_packed.empty())
            m_packed.resize(packedSize(m_n, m_cols));
        m_packedStore = m_packed.data();
    }
    if (!m_isPacked && m_n > 0) {
        constexpr int NT = kPackedTokens;
        const auto cols = static_cast<std::size_t>(m_cols);
        const int padded = (m_n + NT - 1) / NT * NT;
        for (int t = 0; t < padded; ++t) {
            float* dst = m_packedStore + static_cast<std::size_t>(t / NT) * NT * cols + static_cast<std::size_t>(t % NT) * 16;
            if (t >= m_n) {  // the last group's missing tokens: zeros (their sums are never written)
                for (std::size_t c = 0; c < cols; c += 16)
                    std::fill_n(dst + c * NT, std::min<std::size_t>(16, cols - c), 0.0f);
                continue;
            }
            const float* src = m_x + static_cast<std::size_t>(t) * m_ldx;
            for (std::size_t c = 0; c < cols; c += 16)
                std::copy(src + c, src + std::min(c + 16, cols), dst + c * NT);
        }
        m_isPacked = true;
    }
    return m_packedStore;
}

const std::uint16_t* TokenPanel::bf16()
{
    if (m_bf16.empty() && m_n > 0) {
        m_bf16.resize(static_cast<std::size_t>(m_n) * static_cast<std::size_t>(m_cols));
        detail::tokensToBf16(m_x, m_n, m_ldx, m_cols, m_bf16.data());
    }
    return m_bf16.data();
}

const std::uint16_t* TokenPanel::vnni()
{
    if (m_vnni.empty() && m_n > 0) {
        m_vnni.resize(detail::vnniSize(m_n, m_cols));
        detail::tokensToVnni(bf16(), m_n, m_cols, m_vnni.data());
    }
    return m_vnni.data();
}

void rowDotsWith(Kernel k, const QuantMatrix& w, int r, const float* x, int n, std::size_t ldx, float* y,
                 std::vector<float>& scratch)
{
    if (roundsToBf16(k, w)) {
        TokenPanel panel(x, n, ldx, w.cols());
        if (k == Kernel::amx)
            return detail::rowsDotsAmx(w, r, 1, panel.vnni(), n, y, 1);
        return detail::rowsDotsBf16(w, r, 1, panel.bf16(), n, y, 1);
    }
    k = float32Kernel(k);
    // The vector kernels step 16 (8) columns at a time; MX and fp8 blocks are multiples of that.
    if (k == Kernel::avx512 && w.cols() % 16 == 0)
        return detail::rowDotsAvx512(w, r, x, n, ldx, y);
    if (k != Kernel::portable && w.cols() % 8 == 0 && kernelSupported(Kernel::avx2))
        return detail::rowDotsAvx2(w, r, x, n, ldx, y);
    rowDotsPortable(w, r, x, n, ldx, y, scratch);
}

void rowsDotsWith(Kernel k, const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y,
                  std::size_t ldy, std::vector<float>& scratch)
{
    TokenPanel panel(x, n, ldx, w.cols());
    rowsDotsWith(k, w, r0, nrows, panel, y, ldy, scratch);
}

void rowsDotsWith(Kernel k, const QuantMatrix& w, int r0, int nrows, TokenPanel& panel, float* y, std::size_t ldy,
                  std::vector<float>& scratch)
{
    if (roundsToBf16(k, w) && k == Kernel::amx)
        return detail::rowsDotsAmx(w, r0, nrows, panel.vnni(), panel.n(), y, ldy);
    if (roundsToBf16(k, w))
        return detail::rowsDotsBf16(w, r0, nrows, panel.bf16(), panel.n(), y, ldy);
    k = float32Kernel(k);
    const float* x = panel.x();
    const int n = panel.n();
    const std::size_t ldx = panel.ldx();
    // Tiles pay off when a loaded token chunk has rows to feed; with fewer than 4 tokens the one-row
    // kernel measured faster (fp8, 1 token: 18-28 ms against 35 ms in bench engine).
    // From 32 tokens on, the blocked tiles over the packed tokens measured faster (float32 weights,
    // hidden 4096: 1.35x at 256 tokens, 1.1x at 32, even at 8; docs/PERFORMANCE.md).
    if (k == Kernel::avx512 && w.cols() % 16 == 0 && n >= kBlockedMinTokens)
        return detail::rowsBlockedDotsAvx512(w, r0, nrows, panel.packed(), n, y, ldy);
    if (k == Kernel::avx2 && w.cols() % 16 == 0 && n >= kBlockedMinTokens && kernelSupported(Kernel::avx2))
        return detail::rowsBlockedDotsAvx2(w, r0, nrows, panel.packed(), n, y, ldy);
    if (k == Kernel::avx512 && w.cols() % 16 == 0 && n >= 4)
        return detail::rowsDotsAvx512(w, r0, nrows, x, n, ldx, y, ldy);
    for (int i = 0; i < nrows; ++i)
        rowDotsWith(k, w, r0 + i, x, n, ldx, y + static_cast<std::size_t>(i) * ldy, scratch);
}

void rowsDots(const QuantMatrix& w, int r0, int nrows, const float* x, int n, std::size_t ldx, float* y, std::size_t ldy,
              std::vector<float>& scratch)
{
    rowsDotsWith(activeKernel(), w, r0, nrows, x, n, ldx, y, ldy, scratch);
}

void rowsDots(const QuantMatrix& w, int r0, int nrows, TokenPanel& x, float* y, std::size_t ldy, std::vector<float>& scratch)
{
    rowsDotsWith(activeKernel(), w, r0, nrows, x, y, ldy, scratch);
}

void dequantRowsWith(Kernel k, const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo)
{
    k = float32Kernel(k);
    if (k == Kernel::avx512 && c0 % 16 == 0 && c1 % 16 == 0)
        return detail::dequantRowsAvx512(w, r0, nrows, c0, c1, out, ldo);
    if (k == Kernel::avx2 && c0 % 8 == 0 && c1 % 8 == 0 && kernelSupported(Kernel::avx2))
        return detail::dequantRowsAvx2(w, r0, nrows, c0, c1, out, ldo);
    for (int i = 0; i < nrows; ++i)
        w.dequantCols(r0 + i, c0, c1, out + static_cast<std::size_t>(i) * ldo);
}

void dequantRows(const QuantMatrix& w, int r0, int nrows, int c0, int c1, float* out, std::size_t ldo)
{
    dequantRowsWith(activeKernel(), w, r0, nrows, c0, c1, out, ldo);
}

}  // namespace moex::engine
