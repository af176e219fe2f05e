// moex-cli import-hf CONFIG.json [-o MODEL.yaml]: model YAML from a Hugging Face config.json.
#include "cli_args.h"
#include "commands.h"

#include "common/atomic_file.h"
#include "common/diagnostics.h"
#include "model/hf_import.h"
#include "model/model_yaml.h"

#include <iostream>

namespace moex::cli {

int cmdImportHf(const Argv& argv)
{
    Args args("import-hf", argv, {{"output", true, false, 'o'}});
    args.requirePositionals(1, 1, "moex-cli import-hf CONFIG.json [-o MODEL.yaml]");
    const ModelSpec m = importHfConfigFile(args.positionals().front());
    const std::string yaml = "# Imported by: moex-cli import-hf " + printableLine(args.positionals().front()) + "\n" + modelToYaml(m);
    if (auto out = args.value("output"); out && *out != "-") {
        writeFileAtomically(*out, yaml);
        std::cerr << "wrote " << *out << " (" << m.name << ")\n";
    } else {
        std::cout << yaml;
    }
    return 0;
}

}  // namespace moex::cli
