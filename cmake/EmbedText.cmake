# embed_text(OUT_CPP SYMBOL INPUT): writes OUT_CPP defining
# `const char aiter_compat::embedded::SYMBOL[]` with INPUT's bytes, regenerated when INPUT changes.
function(embed_text out_cpp symbol input)
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${out_cpp} -DSYMBOL=${symbol}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedTextScript.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/EmbedTextScript.cmake
    COMMENT "Embedding ${input}")
endfunction()
