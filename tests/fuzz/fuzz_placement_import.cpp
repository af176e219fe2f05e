// Placement files of the serving systems, read back in every format (place --load).
#include "fuzz_common.h"
#include "model/model_yaml.h"
#include "placement/exporters.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // Mixtral's shape (8 experts, 32 layers) keeps every valid input small.
    static const moex::ModelSpec model = moex::loadModelFile(MOEX_SOURCE_DIR "/samples/models/mixtral-8x7b.yaml");
    const std::string text(moex::fuzz::bytes(data, size));
    for (moex::ExportFormat f : moex::allExportFormats())
        moex::fuzz::expectInputErrorOnly([&] { moex::parsePlacementExport(text, model, 8, f, "fuzz"); });
    return 0;
}
