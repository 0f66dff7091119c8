# Writes OUT (a header defining CONVLAB_GIT_COMMIT) from the git commit of SRC, at build time, so
# the benchmark's machine record names the commit that was built (with "-dirty" when tracked
# files differ from it). The file is rewritten only when its text changes (no needless rebuilds).
set(commit "unknown")
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    set(commit "${out}")
    execute_process(COMMAND ${GIT} status --porcelain --untracked-files=no
                    WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE dirty ERROR_QUIET)
    if(NOT "${dirty}" STREQUAL "")
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "#define CONVLAB_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
