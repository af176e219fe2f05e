#include "model/dtype.h"

namespace moex {

double bytesPerElement(DType t)
{
    switch (t) {
    case DType::bf16:
    case DType::fp16:
        return 2.0;
    case DType::fp32:
        return 4.0;
    case DType::fp8:
        return 1.0 + 4.0 / (128.0 * 128.0);
    case DType::nvfp4:
        return 0.5 + 1.0 / 16.0;
    case DType::mxfp4:
        return 0.5 + 1.0 / 32.0;
    case DType::int4:
        return 0.5 + 2.0 / 32.0;
    }
    return 2.0;
}

std::string_view toString(DType t)
{
    switch (t) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::fp8: return "fp8";
    case DType::nvfp4: return "nvfp4";
    case DType::mxfp4: return "mxfp4";
    case DType::int4: return "int4";
    }
    return "bf16";
}

std::optional<DType> parseDType(std::string_view s)
{
    for (DType t : {DType::bf16, DType::fp16, DType::fp8, DType::nvfp4, DType::mxfp4, DType::int4, DType::fp32})
        if (toString(t) == s)
            return t;
    return std::nullopt;
}

bool isFourBit(DType t)
{
    return t == DType::nvfp4 || t == DType::mxfp4 || t == DType::int4;
}

}  // namespace moex
