#include "engine/quant_matrix.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace moex::engine {

namespace {

constexpr int kFp8Block = 128;
constexpr int kMxBlock = 32;
constexpr float kE4m3Max = 448.0f;
constexpr std::array<float, 8> kE2m1 = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

std::uint64_t splitmix(std::uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
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

float hashUniform(std::uint64_t seed, std::uint64_t index)
{
    const std::uint64_t h = splitmix(splitmix(seed) ^ index);
    return static_cast<float>(static_cast<double>(h >> 40) * 0x1.0p-23 - 1.0);  // 24 bits -> [-1, 1)
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
    const std::uint8_t sign = std::signbit(v) ? 0x80 : 0;
    const float a = std::min(std::fabs(v), kE4m3Max);
    if (!(a > 0))
        return sign;
    if (a < 0x1p-6f) {
        // Subnormals are m x 2^-9, m = 0..7; m = 8 is the smallest normal, code 8 as well.
        return static_cast<std::uint8_t>(sign | static_cast<int>(std::nearbyint(a * 512.0f)));
    }
    // Round the float's 23-bit mantissa to 3 bits, to nearest even, then rebias the exponent.
    std::uint32_t u = std::bit_cast<std::uint32_t>(a);
    u += 0x7ffffu + ((u >> 20) & 1u);
    const int exp = static_cast<int>((u >> 23) & 0xffu) - 127 + 7;
    const int man = static_cast<int>((u >> 20) & 7u);
    if (exp > 15 || (exp == 15 && man > 6))
        return static_cast<std::uint8_t>(sign | 0x7e);  // 448, the largest finite
    return static_cast<std::uint8_t>(sign | (exp << 3) | man);
}

float e2m1ToFloat(std::uint8_t v)
{
    const float m = kE2m1[v & 7u];
    return (v & 8u) ? -m : m;
}

std::uint8_t floatToE2m1(float v)
{
    const std::uint8_t sign = std::signbit(v) ? 8 : 0;
    const float a = std::fabs(v);
    int best = 0;
    for (int i = 1; i < 8; ++i)
        if (std::fabs(kE2m1[static_cast<std::size_t>(i)] - a) < std::fabs(kE2m1[static_cast<std::size_t>(best)] - a))
            best = i;
    return static_cast<std::uint8_t>(sign | best);
}

QuantMatrix::QuantMatrix(WeightFormat fmt, int rows, int cols, const std::vector<float>& values)
    : m_fmt(fmt), m_rows(rows), m_cols(cols)
{
    if (rows <= 0 || cols <= 0 || values.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols))
        throw std::invalid_argument("QuantMatrix: " + std::to_string(values.size()) + " values for " +
                                    std::to_string(rows) + " x " + std::to_string(cols));
    const auto R = static_cast<std::size_t>(rows), C = static_cast<std::size_t>(cols);
    switch (fmt) {
    case WeightFormat::f32:
        m_rowBytes = C * 4;
        m_data.resize(R * m_rowBytes);
        std::copy(values.begin(), values.end(), reinterpret_cast<float*>(m_data.data()));
        break;
    case WeightFormat::bf16: {
        m_rowBytes = C * 2;
        m_data.resize(R * m_rowBytes);
        auto* out = reinterpret_cast<std::uint16_t*>(m_data.data());
        for (std::size_t i = 0; i < values.size(); ++i)
            out[i] = floatToBf16(values[i]);
        break;
    }
    case WeightFormat::fp8_block: {
        m_rowBytes = C;
        m_data.resize(R * C);
        const std::size_t br = (R + kFp8Block - 1) / kFp8Block, bc = (C + kFp8Block - 1) / kFp8Block;
        m_scales.assign(br * bc, 1.0f);
        for (std::size_t bi = 0; bi < br; ++bi)
            for (std::size_t bj = 0; bj < bc; ++bj) {
                float amax = 0;
                for (std::size_t r = bi * kFp8Block; r < std::min(R, (bi + 1) * kFp8Block); ++r)
                    for (std::size_t c = bj * kFp8Block; c < std::min(C, (bj + 1) * kFp8Block); ++c)
                        amax = std::max(amax, std::fabs(values[r * C + c]));
                const float scale = amax > 0 ? amax / kE4m3Max : 1.0f;
                m_scales[bi * bc + bj] = scale;
                for (std::size_t r = bi * kFp8Block; r < std::min(R, (bi + 1) * kFp8Block); ++r)
                    for (std::size_t c = bj * kFp8Block; c < std::min(C, (bj + 1) * kFp8Block); ++c)
                        m_data[r * C + c] = floatToE4m3(values[r * C + c] / scale);
            }
        break;
    }
    case WeightFormat::mxfp4: {
        if (C % kMxBlock != 0)
            throw std::invalid_argument("QuantMatrix: mxfp4 needs columns in multiples of 32, not " + std::to_string(C));
        m_rowBytes = C / 2;
        m_data.assign(R * m_rowBytes, 0);
        const std::size_t blocks = C / kMxBlock;
        m_scales.assign(R * blocks, 1.0f);
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t b = 0; b < blocks; ++b) {
                float amax = 0;
                for (std::size_t c = b * kMxBlock; c < (b + 1) * kMxBlock; ++c)
                    amax = std::max(amax, std::fabs(values[r * C + c]));
                // OCP MX: shared exponent floor(log2(amax)) - 2, the largest e2m1 exponent.
                const float scale = amax > 0 ? std::ldexp(1.0f, std::ilogb(amax) - 2) : 1.0f;
                m_scales[r * blocks + b] = scale;
                for (std::size_t c = b * kMxBlock; c < (b + 1) * kMxBlock; ++c) {
                    const std::uint8_t q = floatToE2m1(values[r * C + c] / scale);
                    m_data[r * m_rowBytes + c / 2] |= static_cast<std::uint8_t>(c % 2 ? q << 4 : q);
                }
            }
        break;
    }
    }
}

QuantMatrix QuantMatrix::seeded(WeightFormat fmt, int rows, int cols, std::uint64_t seed, float a)
{
    std::vector<float> v(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
    const float amp = a * 1.7320508f;
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = amp * hashUniform(seed, i);
    return QuantMatrix(fmt, rows, cols, v);
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
