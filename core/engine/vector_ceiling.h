// What this CPU's vector units do with no memory traffic: chains of 512-bit FMAs, 256-bit FMAs and
// VDPBF16PS (bench engine's ceilings), and how VDPBF16PS compares with FMAs here, which decides
// whether the avx512-bf16 kernel's bf16 and fp8 products outrun a float32 sgemm (openblas.h).
#pragma once

namespace moex::engine {

// Each runs `iters` rounds of 16 (fmaLoop256: 12) independent chains on the calling thread and
// returns a value that depends on every chain (keep it, so the loop is not removed). A round does
// 16 x 16 x 2 FLOPs (fmaLoop512), 12 x 8 x 2 (fmaLoop256), 16 x 32 x 2 (dpbf16Loop512). Call only
// where the CPU has the instructions (kernelSupported(Kernel::avx512 / avx2 / avx512bf16)).
double fmaLoop512(long iters);
double fmaLoop256(long iters);
double dpbf16Loop512(long iters);
// The same for the AMX tiles: `iters` rounds of four independent TDPBF16PS (16 x 16 x 32 x 2 FLOPs
// each) on tiles loaded once. Only where kernelSupported(Kernel::amx) (row_kernels_amx.cpp, with
// the kernel's tile instructions).
double tileDotLoop(long iters);

// FLOPs per second of VDPBF16PS chains over 512-bit FMA chains on one thread, measured once per
// process (three alternating pairs of a few milliseconds, the median; about 20 ms in all): about 2
// on AMD Zen 4 and 5 (VDPBF16PS at the FMA's instruction rate), 0.5 on the Intel Xeon measured
// 2026-12-05 (VDPBF16PS at half the FMA's FLOPs). 0 where the CPU lacks AVX-512-BF16.
double bf16DotSpeedup();

}  // namespace moex::engine
