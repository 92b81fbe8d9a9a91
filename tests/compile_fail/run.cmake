# Compiles SRC and prints the compiler's diagnostics; prints KB_UNEXPECTEDLY_COMPILED if it compiled.
set(args -std=c++20 -fsyntax-only)
foreach(dir IN LISTS INCLUDES)
  list(APPEND args -I${dir})
endforeach()
execute_process(COMMAND ${CXX} ${args} ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
# One readable diagnostic per failed requirement: a second, bare "static assertion failed" (an
# outer assert repeating an inner one) is a defect.
string(REGEX MATCHALL "static assertion failed" asserts "${out}${err}")
list(LENGTH asserts n_asserts)
if(n_asserts GREATER 1)
  message("KB_SECOND_DIAGNOSTIC: ${n_asserts} static assertions failed")
endif()
if(rc EQUAL 0)
  message("KB_UNEXPECTEDLY_COMPILED")
endif()
