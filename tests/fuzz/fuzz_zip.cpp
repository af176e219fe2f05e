// The ZIP reader of torch archives (.pt files are ZIPs of a pickle and tensor blobs).
#include "fuzz_common.h"
#include "placement/zip_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    return moex::fuzz::expectInputErrorOnly([&] {
        for (const auto& e : moex::parseZip(moex::fuzz::bytes(data, size), "fuzz.zip"))
            (void)moex::crc32(e.data);
    });
}
