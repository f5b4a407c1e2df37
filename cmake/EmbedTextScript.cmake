# Run with -P: turns INPUT into a C++ array named SYMBOL in OUTPUT. Hex bytes rather than a raw
# string literal, so no content can end the literal early.
file(READ ${INPUT} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){32})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUTPUT}
  "// Generated from ${INPUT}; do not edit.\n"
  "namespace aiter_compat::embedded {\n"
  "extern const char ${SYMBOL}[];\n"
  "const char ${SYMBOL}[] = {\n${bytes}0x00};\n"
  "}\n")
