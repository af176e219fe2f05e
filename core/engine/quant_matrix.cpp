#include "engine/quant_matrix.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace moex::engine {

namespace {

constexpr int kFp8Block = 128;
constexpr int kMxBlock = 32;
constexpr float kE4m3Max = 448.0f;
constexpr std::array<float, 8> kE2m1 = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// floatToE4m3 without branches, inlined into the quantising loops (seeded weights convert every
// element through it). Saturating at +-448, round to nearest even; NaN gives a signed zero.
inline std::uint8_t e4m3Code(float v)
{
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
    const auto sign = static_cast<std::uint32_t>((bits >> 24) & 0x80u);
    const float fa = std::fabs(v);
    const float a = fa > kE4m3Max ? kE4m3Max : fa;  // NaN stays NaN, and then fails a > 0 below
    // Subnormals are m x 2^-9, m = 0..7, rounded to even by the 1.5 x 2^23 trick (exact below
    // 2^22, the result nearbyint gives); m = 8 is the smallest normal, code 8 as well. Taken of 0
    // where a is not subnormal (NaN included), so that the cast to int always has a value in 0..8.
    const float s = a < 0x1p-6f ? a : 0.0f;
    const float sub = (s * 512.0f + 0x1.8p23f) - 0x1.8p23f;
    const auto subCode = static_cast<std::uint32_t>(static_cast<int>(sub));
    // Normals: the float's 23-bit mantissa rounded to 3 bits, to nearest even, the exponent
    // rebiased; never above 448 (exponent 15, mantissa 6) since a is clamped to it.
    std::uint32_t u = std::bit_cast<std::uint32_t>(a);
    u += 0x7ffffu + ((u >> 20) & 1u);
    const std::uint32_t normCode = ((((u >> 23) & 0xffu) - 120u) << 3 | ((u >> 20) & 7u)) & 0x7fu;
    const std::uint32_t code = a < 0x1p-6f ? subCode : normCode;
    return static_cast<std::uint8_t>(sign | (a > 0 ? code : 0u));
}

const std::array<float, 256>& e4m3Table()
{
    static const std::array<float, 256> table = [] {
        std::array<float, 256> t{};
        for (int v = 0; v < 256; ++v) {
            const int sign = v >> 7, exp = (v >> 3) & 15, man = v & 7;
            float f;
            if (exp == 15 && man == 7)
                f = std::nanf("");  // e4m3fn: the only NaN pattern; never produced by floatToE4m3
            else if (exp == 0)
                f = std::ldexp(static_cast<float>(man) / 8.0f, -6);
            else
                f = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
            t[static_cast<std::size_t>(v)] = sign ? -f : f;
        }
        return t;
    }();
    return table;
}

}  // namespace

WeightFormat weightFormatFor(DType t)
{
    switch (t) {
    case DType::fp32: return WeightFormat::f32;
    case DType::bf16:
    case DType::fp16: return WeightFormat::bf16;
    case DType::fp8: return WeightFormat::fp8_block;
    case DType::mxfp4:
    case DType::nvfp4:
    case DType::int4: return WeightFormat::mxfp4;
    }
    return WeightFormat::f32;
}

const char* toString(WeightFormat f)
{
    switch (f) {
    case WeightFormat::f32: return "f32";
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::fp8_block: return "fp8-e4m3 (128x128 block scales)";
    case WeightFormat::mxfp4: return "mxfp4 (e2m1, 32-element e8m0 scales)";
    }
    return "?";
}

std::uint16_t floatToBf16(float v)
{
    std::uint32_t u = std::bit_cast<std::uint32_t>(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(u >> 16);
}

float bf16ToFloat(std::uint16_t v)
{
    return std::bit_cast<float>(static_cast<std::uint32_t>(v) << 16);
}

float e4m3ToFloat(std::uint8_t v)
{
    return e4m3Table()[v];
}

std::uint8_t floatToE4m3(float v)
{
    return e4m3Code(v);
}

float e2m1ToFloat(std::uint8_t v)
{
    const float m = kE2m1[v & 7u];
    return (v & 8u) ? -m : m;
}

std::uint8_t floatToE2m1(float v)
{
    // The nearest of the eight magnitudes, a tie to the smaller: the count of midpoints between
    // them that |v| lies above. NaN and infinity give 0, as the distance search this replaced did.
    const std::uint8_t sign = std::signbit(v) ? 8 : 0;
    const float a = std::fabs(v);
    if (!(a < std::numeric_limits<float>::infinity()))
        return sign;
    const int code = (a > 0.25f) + (a > 0.75f) + (a > 1.25f) + (a > 1.75f) + (a > 2.5f) + (a > 3.5f) + (a > 5.0f);
    return static_cast<std::uint8_t>(sign | code);
}

QuantMatrix::QuantMatrix(WeightFormat fmt, int rows, int cols, const std::vector<float>& values)
{
    if (rows <= 0 || cols <= 0 || values.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols))
        throw std::invalid_argument("QuantMatrix: " + std::to_string(values.size()) + " values for " +
                                    std::to_string(rows) + " x " + std::to_string(cols));
    allocate(fmt, rows, cols);
    const auto C = static_cast<std::size_t>(cols);
    quantise([&values, C](std::size_t r, std::size_t c) { return values[r * C + c]; });
}

QuantMatrix QuantMatrix::seeded(WeightFormat fmt, int rows, int cols, std::uint64_t seed, float a)
{
    if (rows <= 0 || cols <= 0)
        throw std::invalid_argument("QuantMatrix: no seeded matrix of " + std::to_string(rows) + " x " + std::to_string(cols));
    QuantMatrix m;
    m.allocate(fmt, rows, cols);
    // Each element straight from its hash into the storage: no fp32 copy of the whole matrix, whose
    // fresh pages cost more than the hash and the rounding together (docs/PERFORMANCE.md, "Seeded
    // weights").
    const float amp = a * 1.7320508f;
    const auto C = static_cast<std::size_t>(cols);
    m.quantise([amp, seed, C](std::size_t r, std::size_t c) { return amp * hashUniform(seed, r * C + c); });
    return m;
}

void QuantMatrix::allocate(WeightFormat fmt, int rows, int cols)
{
    if (fmt == WeightFormat::mxfp4 && cols % kMxBlock != 0)
        throw std::invalid_argument("QuantMatrix: mxfp4 needs columns in multiples of 32, not " + std::to_string(cols));
    m_fmt = fmt;
    m_rows = rows;
    m_cols = cols;
    m_rowBytes = rowBytesOf(fmt, cols);
    m_data.resize(static_cast<std::size_t>(rows) * m_rowBytes);
    m_scales.assign(scaleCountOf(fmt, rows, cols), 1.0f);
}

template <typename Value>
void QuantMatrix::quantise(Value value)
{
    const auto R = static_cast<std::size_t>(m_rows), C = static_cast<std::size_t>(m_cols);
    switch (m_fmt) {
    case WeightFormat::f32: {
        auto* out = reinterpret_cast<float*>(m_data.data());
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t c = 0; c < C; ++c)
                out[r * C + c] = value(r, c);
        break;
    }
    case WeightFormat::bf16: {
        auto* out = reinterpret_cast<std::uint16_t*>(m_data.data());
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t c = 0; c < C; ++c)
                out[r * C + c] = floatToBf16(value(r, c));
        break;
    }
    case WeightFormat::fp8_block: {
        // One 128 x 128 block at a time: its values, their largest magnitude, then the block
        // rounded against the scale that maps it onto +-448.
        const std::size_t bc = (C + kFp8Block - 1) / kFp8Block;
        std::vector<float> block(static_cast<std::size_t>(kFp8Block) * kFp8Block);
        for (std::size_t r0 = 0; r0 < R; r0 += kFp8Block)
            for (std::size_t c0 = 0; c0 < C; c0 += kFp8Block) {
                const std::size_t r1 = std::min(R, r0 + kFp8Block), c1 = std::min(C, c0 + kFp8Block), w = c1 - c0;
                float amax = 0;
                for (std::size_t r = r0; r < r1; ++r)
                    for (std::size_t c = c0; c < c1; ++c) {
                        const float v = value(r, c);
                        block[(r - r0) * w + (c - c0)] = v;
                        amax = std::max(amax, std::fabs(v));
                    }
                const float scale = amax > 0 ? amax / kE4m3Max : 1.0f;
                m_scales[(r0 / kFp8Block) * bc + c0 / kFp8Block] = scale;
                for (std::size_t r = r0; r < r1; ++r)
                    for (std::size_t c = c0; c < c1; ++c)
                        m_data[r * C + c] = e4m3Code(block[(r - r0) * w + (c - c0)] / scale);
            }
        break;
    }
    case WeightFormat::mxfp4: {
        const std::size_t blocks = C / kMxBlock;
        float block[kMxBlock];
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t b = 0; b < blocks; ++b) {
                float amax = 0;
                for (std::size_t i = 0; i < kMxBlock; ++i) {
                    block[i] = value(r, b * kMxBlock + i);
                    amax = std::max(amax, std::fabs(block[i]));
                }
                // OCP MX: shared exponent floor(log2(amax)) - 2, the largest e2m1 exponent.
                const float scale = amax > 0 ? std::ldexp(1.0f, std::ilogb(amax) - 2) : 1.0f;
                m_scales[r * blocks + b] = scale;
                std::uint8_t* out = m_data.data() + r * m_rowBytes + b * (kMxBlock / 2);
                for (std::size_t i = 0; i < kMxBlock; i += 2)
                    out[i / 2] = static_cast<std::uint8_t>(floatToE2m1(block[i] / scale) | floatToE2m1(block[i + 1] / scale) << 4);
            }
        break;
    }
    }
}

std::size_t QuantMatrix::rowBytesOf(WeightFormat fmt, int cols)
{
    const auto C = static_cast<std::size_t>(cols);
    switch (fmt) {
    case WeightFormat::f32: return C * 4;
    case WeightFormat::bf16: return C * 2;
    case WeightFormat::fp8_block: return C;
    case WeightFormat::mxfp4: return C / 2;
    }
    return 0;
}

std::size_t QuantMatrix::scaleCountOf(WeightFormat fmt, int rows, int cols)
{
    const auto R = static_cast<std::size_t>(rows), C = static_cast<std::size_t>(cols);
    if (fmt == WeightFormat::fp8_block)
        return ((R + kFp8Block - 1) / kFp8Block) * ((C + kFp8Block - 1) / kFp8Block);
    if (fmt == WeightFormat::mxfp4)
        return R * (C / kMxBlock);
    return 0;
}

std::size_t QuantMatrix::storageBytes(WeightFormat fmt, int rows, int cols)
{
    return static_cast<std::size_t>(rows) * rowBytesOf(fmt, cols) + scaleCountOf(fmt, rows, cols) * sizeof(float);
}

QuantMatrix QuantMatrix::fromStorage(WeightFormat fmt, int rows, int cols, std::vector<std::uint8_t> data,
                                     std::vector<float> scales)
{
    if (rows <= 0 || cols <= 0 || (fmt == WeightFormat::mxfp4 && cols % kMxBlock != 0))
        throw std::invalid_argument("QuantMatrix: no " + std::string(toString(fmt)) + " matrix of " + std::to_string(rows)
                                    + " x " + std::to_string(cols));
    const std::size_t rowBytes = rowBytesOf(fmt, cols);
    if (data.size() != static_cast<std::size_t>(rows) * rowBytes || scales.size() != scaleCountOf(fmt, rows, cols))
        throw std::invalid_argument("QuantMatrix: " + std::to_string(data.size()) + " bytes and " + std::to_string(scales.size())
                                    + " scales for a " + toString(fmt) + " matrix of " + std::to_string(rows) + " x "
                                    + std::to_string(cols));
    QuantMatrix q;
    q.m_fmt = fmt;
    q.m_rows = rows;
    q.m_cols = cols;
    q.m_rowBytes = rowBytes;
    q.m_data.assign(data.begin(), data.end());
    q.m_scales = std::move(scales);
    return q;
}

const float* QuantMatrix::rowScales(int r) const
{
    const auto C = static_cast<std::size_t>(m_cols);
    if (m_fmt == WeightFormat::fp8_block)
        return m_scales.data() + static_cast<std::size_t>(r / kFp8Block) * ((C + kFp8Block - 1) / kFp8Block);
    if (m_fmt == WeightFormat::mxfp4)
        return m_scales.data() + static_cast<std::size_t>(r) * (C / kMxBlock);
    return nullptr;
}

void QuantMatrix::dequantCols(int r, int c0, int c1, float* out) const
{
    const std::uint8_t* p = rowData(r);
    const auto b = static_cast<std::size_t>(c0);
    const auto e = static_cast<std::size_t>(c1);
    switch (m_fmt) {
    case WeightFormat::f32: std::copy(reinterpret_cast<const float*>(p) + b, reinterpret_cast<const float*>(p) + e, out); return;
    case WeightFormat::bf16: {
        const auto* q = reinterpret_cast<const std::uint16_t*>(p);
        for (std::size_t c = b; c < e; ++c)
            out[c - b] = bf16ToFloat(q[c]);
        return;
    }
    case WeightFormat::fp8_block: {
        const auto& t = e4m3Table();
        const float* scales = rowScales(r);
        for (std::size_t c = b; c < e; ++c)
            out[c - b] = t[p[c]] * scales[c / kFp8Block];
        return;
    }
    case WeightFormat::mxfp4: {
        const float* scales = rowScales(r);
        for (std::size_t c = b; c < e; ++c)
            out[c - b] = e2m1ToFloat((c & 1) != 0 ? p[c / 2] >> 4 : p[c / 2] & 15u) * scales[c / kMxBlock];
        return;
    }
    }
}

std::vector<float> QuantMatrix::dequantAll() const
{
    std::vector<float> v(static_cast<std::size_t>(m_rows) * static_cast<std::size_t>(m_cols));
    for (int r = 0; r < m_rows; ++r)
        dequantRow(r, v.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(m_cols));
    return v;
}

}  // namespace moex::engine
