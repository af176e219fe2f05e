#include "qt_text.h"

#include "common/diagnostics.h"

namespace moex::session {

QString errorText(const std::exception& e)
{
    if (const auto* input = dynamic_cast<const InputError*>(&e))
        return qs(input->diagnostics().format()).trimmed();
    return qs(e.what()).trimmed();
}

}  // namespace moex::session
