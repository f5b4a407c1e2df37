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

# embed_python(OUT_VAR SYMBOL SOURCE): embeds a Python source twice, as text
# (`aiter_compat::embedded::SYMBOL_py[]`) and as bytecode compiled by the build's Python
# (`SYMBOL_pyc[]`, `SYMBOL_pyc_size`: its magic number, then the marshalled code object), and
# appends the generated .cpp files to OUT_VAR. Loading the bytecode saves compiling the source at
# every start of an embedded interpreter; the text is the fallback for another Python version.
function(embed_python out_var symbol source)
  get_filename_component(name ${source} NAME)
  set(dir ${CMAKE_BINARY_DIR}/embedded_python)
  set(pyc ${dir}/${symbol}.pyc)
  add_custom_command(
    OUTPUT ${pyc}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/cmake/CompilePython.py ${source} ${pyc} "<aiter_compat/${name}>"
    DEPENDS ${source} ${PROJECT_SOURCE_DIR}/cmake/CompilePython.py
    COMMENT "Compiling ${name}"
    VERBATIM)
  embed_text(${dir}/${symbol}_py.cpp ${symbol}_py ${source})
  embed_text(${dir}/${symbol}_pyc.cpp ${symbol}_pyc ${pyc} BINARY)
  set(${out_var} ${${out_var}} ${dir}/${symbol}_py.cpp ${dir}/${symbol}_pyc.cpp PARENT_SCOPE)
endfunction()
