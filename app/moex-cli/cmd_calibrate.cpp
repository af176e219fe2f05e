// moex-cli calibrate --backend cpu -o FILE [--threads N] [--quick]
// Measures this machine's CPU engine kernels (run/host_calibration.h) and writes a calibration
// file for the host-cpu topology: `compare --measured --calibration FILE` predicts with it.
#include "cli_args.h"
#include "commands.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "run/host_calibration.h"

#include <iostream>

namespace moex::cli {

int cmdCalibrate(const Argv& argv)
{
    Args args("calibrate", argv, {{"backend"}, {"output", true, false, 'o'}, {"threads"}, {"quick", false}});
    args.requirePositionals(0, 0, "moex-cli calibrate --backend cpu -o FILE [--threads N] [--quick]");
    const std::string backend = args.value("backend").value_or("cpu");
    if (backend != "cpu")
        throw InputError(Location{"moex-cli calibrate", 0, 0},
                         "--backend " + backend + ": only the cpu engine can be calibrated in this build");
    const auto out = args.value("output");
    if (!out)
        throw InputError(Location{"moex-cli calibrate", 0, 0}, "missing -o FILE (where the calibration is written)");
    // (Args refused an -o whose directory is not there, before a minute of measuring.)
    HostCalibrationOptions options;
    options.threads = args.intValue("threads", 0, 1, 4096);
    options.quick = args.has("quick");
    options.progress = [](const std::string& line) { std::cerr << "moex-cli calibrate: " << line << '\n'; };
    const Calibration c = measureHostCalibration(options);
    const std::string text = "# moex CPU calibration for the host-cpu topology (moex-cli calibrate --backend cpu)\n"
        + calibrationToYaml(c);
    // '-o -': the file on stdout, what was written on stderr (as place does; it wrote a file named '-').
    if (*out == "-") {
        std::cout << text << std::flush;
        std::cerr << "moex-cli calibrate: " << c.name << ", " << c.cpu.cpu << '\n';
        return 0;
    }
    writeFileAtomically(*out, text);
    std::cout << "wrote " << *out << ": " << c.name << ", " << c.cpu.cpu << '\n';
    return 0;
}

}  // namespace moex::cli
