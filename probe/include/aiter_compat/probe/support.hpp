#pragma once
// Three-valued answers with their reasons: "could not tell" is kept apart from "no".
#include <string>
#include <string_view>

namespace aiter_compat {

enum class Support { supported, unsupported, unknown };

std::string_view to_string(Support s);

}  // namespace aiter_compat
