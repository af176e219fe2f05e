#include "engine/openblas.h"

#include "engine/vector_ceiling.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace moex::engine::openblas {

const Library& library()
{
    static const Library lib = [] {
        Library out;
        void* handle = nullptr;
        const char* chosen = std::getenv("MOEX_OPENBLAS");
        if (chosen && *chosen) {
            // The user's OpenBLAS (another build, a path outside the loader's): that one or none.
            if (!(handle = dlopen(chosen, RTLD_NOW | RTLD_LOCAL))) {
                const char* why = dlerror();
                out.error = std::string("OpenBLAS could not be loaded from MOEX_OPENBLAS=") + chosen + ": " +
                            (why ? why : "not found");
                return out;
            }
        } else {
            for (const char* name : {"libopenblas.so.0", "libopenblas.so"})
                if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr)
                    break;
            if (!handle) {
                const char* why = dlerror();
                out.error = std::string("OpenBLAS (Debian's libopenblas0) could not be loaded: ") + (why ? why : "not found");
                return out;
            }
        }
        out.sgemm = reinterpret_cast<Library::Sgemm>(dlsym(handle, "cblas_sgemm"));
        out.setThreads = reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads"));
        out.corename = reinterpret_cast<char* (*)()>(dlsym(handle, "openblas_get_corename"));
        if (!out.sgemm || !out.setThreads || !out.corename) {
            out.error = std::string("the library loaded as OpenBLAS (") + (chosen && *chosen ? chosen : "libopenblas.so.0") +
                        ") lacks cblas_sgemm, openblas_set_num_threads or openblas_get_corename";
            dlclose(handle);
            return out;
        }
        out.setThreads(1);
        // OpenBLAS's names of its AVX-512 sgemm kernels (the rest are AVX2 or older).
        const std::string core = out.corename();
        for (const char* name : {"skylakex", "cooperlake", "sapphirerapids"})
            if (std::equal(core.begin(), core.end(), name, name + std::strlen(name),
                           [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }))
                out.avx512 = true;
        return out;
    }();
    return lib;
}

void sgemmNT(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc, float beta)
{
    library().sgemm(kRowMajor, kNoTrans, kTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

int fromTokens(Kernel k, WeightFormat f, bool avx512Sgemm, bool fastBf16Dot)
{
    // GFLOP/s of two experts on two threads at 64 / 128 / 256 tokens, each kernel's against
    // OpenBLAS's, in docs/PERFORMANCE.md. The quantised formats reach the sgemm as blocks
    // dequantised with vector loads (moe_layer.cpp projectOpenBlas): mxfp4 among them, since its
    // weights stopped going one scalar lookup at a time.
    switch (k) {
    case Kernel::avx512bf16:
        // bf16, fp8 and mxfp4 products through VDPBF16PS outrun any float32 sgemm only where it
        // gives about twice the FMA's FLOPs; where it does not, they stand where the avx512
        // kernel's do.
        return avx512Sgemm && (f == WeightFormat::f32 || !fastBf16Dot) ? 128 : 0;
    case Kernel::avx512: return avx512Sgemm ? 128 : 0;
    // The tiles do bf16, fp8 and mxfp4 at several times any float32 sgemm's rate; float32 weights
    // keep float32 products, as on avx512.
    case Kernel::amx: return avx512Sgemm && f == WeightFormat::f32 ? 128 : 0;
    // bf16: through OpenBLAS's AVX2 sgemm 13% faster than the avx2 kernel at 128 tokens, 28% at
    // 256; mxfp4 20% at 64, 38% at 128.
    case Kernel::avx2: return f == WeightFormat::fp8_block || f == WeightFormat::mxfp4 ? 64 : 128;
    case Kernel::portable: return f == WeightFormat::mxfp4 ? 64 : 32;
    }
    return 0;
}

int fromTokens(GemmChoice c, Kernel k, WeightFormat f)
{
    switch (c) {
    case GemmChoice::engine: return 0;
    case GemmChoice::automatic:
        return library().loaded() ? fromTokens(k, f, library().avx512, k != Kernel::avx512bf16 || bf16DotSpeedup() >= kFastBf16Dot) : 0;
    case GemmChoice::openblas:
        if (!library().loaded())
            throw std::runtime_error(library().error);
        return 1;
    }
    return 0;
}

const char* toString(GemmChoice c)
{
    switch (c) {
    case GemmChoice::automatic: return "auto";
    case GemmChoice::engine: return "engine";
    case GemmChoice::openblas: return "openblas";
    }
    return "?";
}

}  // namespace moex::engine::openblas
