# Run with -P: turns INPUT into a C++ array named SYMBOL in OUTPUT, with a trailing NUL for
# text and a SYMBOL_size constant for binaries (BINARY=ON). Hex bytes rather than a raw string
# literal, so no content can end the literal early.
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" bytes "${bytes}")
if(BINARY)
  file(WRITE ${OUTPUT}
    "// Generated from ${INPUT}; do not edit.\n#include <cstddef>\n"
    "namespace aiter_compat::embedded {\n"
    "extern const unsigned char ${SYMBOL}[];\nextern const std::size_t ${SYMBOL}_size;\n"
    "alignas(64) const unsigned char ${SYMBOL}[] = {\n${bytes}0x00};\n"
    "const std::size_t ${SYMBOL}_size = ${size};\n}\n")
else()
  file(WRITE ${OUTPUT}
    "// Generated from ${INPUT}; do not edit.\n"
    "namespace aiter_compat::embedded {\n"
    "extern const char ${SYMBOL}[];\n"
    "const char ${SYMBOL}[] = {\n${bytes}0x00};\n"
    "}\n")
endif()
