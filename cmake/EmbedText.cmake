# embed_text(OUT_CPP SYMBOL INPUT [BINARY]): writes OUT_CPP defining
# `aiter_compat::embedded::SYMBOL[]` with INPUT's bytes (and SYMBOL_size for BINARY), regenerated
# when INPUT changes.
function(embed_text out_cpp symbol input)
  set(binary OFF)
  if("BINARY" IN_LIST ARGN)
    set(binary ON)
  endif()
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${out_cpp} -DSYMBOL=${symbol} -DBINARY=${binary}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedTextScript.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/EmbedTextScript.cmake
    COMMENT "Embedding ${input}")
endfunction()
