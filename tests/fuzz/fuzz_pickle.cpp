// The pickle reader of SGLang's .pt recorder files (never executes anything: a reader, not an
// unpickler).
#include "fuzz_common.h"
#include "placement/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly([&] { moex::parsePickle(moex::fuzz::bytes(data, size), "fuzz.pkl"); });
}
