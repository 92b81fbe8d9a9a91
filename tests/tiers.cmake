# The test tiers of the doctest cases (docs/testing.md). Every test is in the full tier, the one
# `.ci/run` runs; the fast tier (CTest label "fast") is every doctest case but those matched by
# KB_FULL_ONLY_TESTS. Cases matched by KB_SERIAL_TESTS run alone (RUN_SERIAL), every other one beside
# other tests under `ctest -j`. The tests added by name (compile_fail.*, lint.*, export.*, mpi.*, ...)
# get the same two properties where they are added (tests/CMakeLists.txt, tests/mpi/CMakeLists.txt).
#
# Each entry is a regular expression on a TEST_CASE's name. Read at configure time, where an entry
# that matches no TEST_CASE of tests/test_*.cpp is an error (a renamed test would silently leave its
# tier), and by ctest, which applies them to the cases each test program listed when it was built.

# Run alone: their checks depend on how fast real code ran (a ratio, a speedup, a floor, the length
# of a sample, a cheat caught by its timing, a wall-clock bound on a run that times code), or on how
# threads and processes are scheduled (a bounded wait for two calls to overlap, heartbeats). Another
# test beside them on two cores could fail them; it could not make them pass.
set(KB_SERIAL_TESTS
  # backends: the host backend's timing
  "^host timing: "
  "^host backend: every corpus candidate gets the verdict"  # samples at least as long as the file says; 1 s run timeouts
  "^host backend: a candidate timed against an identical twin"
  "^host backend: interleaved A/B reports"
  "^host backend: device seconds, the baseline"
  "^host backend: the default search on a host problem beats"
  # cli: the same, through the command-line tuner
  "^cli: eval runs one candidate"  # a speedup, and a forged timing caught by its timing
  "^cli: check measures the reference against its floors"
  "^record: a host sweep in two parts"  # the replay's best is the faster of two kernels 1.4x apart
  # generate: a wall-clock bound on a search that times its baseline first
  "^endpoint CLI: --wall holds"
  # scheduling: bounded waits for overlapping calls
  "^pool members evaluate at once"
  "^a lost member's evaluation is re-queued"
  "^a pool search resumed from its journal"
  "^generation and evaluation overlap"
  "^model requests are in flight while evaluations are dispatched")

# Left out of the fast tier: the costly cases (seconds each in a 2-core CI run, from ctest's
# Testing/Temporary/CTestCostData.txt). What the fast tier keeps of each module is in docs/testing.md.
set(KB_FULL_ONLY_TESTS
  # core (kernelbrain_core_tests)
  "^every catalogue template compiles at sampled points"  # 11 s
  # backends (kernelbrain_backends_tests)
  "^host backend: every corpus candidate"  # 37 s
  "^host backend: the default search on a host problem"  # 46 s
  "^host backend: a candidate timed against an identical twin"  # 10 s
  "^host backend: interleaved A/B reports"  # 9 s
  "^host backend: device seconds"  # 9 s
  "^host backend: candidates that signal the search"  # 9 s
  "^host sanitizer stage: the catalogue's families"  # 15 s
  "^host timing: the two cheats on repeated inputs"  # 12 s
  "^launch plan fuzz: "  # 35 s (3 cases)
  # generate (kernelbrain_generate_tests)
  "^a host search through the HTTP client"  # 145 s
  "^model requests are in flight"  # 82 s
  "^an exchange search answered by another process"  # 64 s
  "^a suspended exchange search resumes"  # 55 s
  "^endpoint CLI: "  # 70 s (5 cases)
  # cli (kernelbrain_cli_tests)
  "^recipes: "  # 64 s
  "^cli: eval runs"  # 76 s
  "^cli: check measures"  # 25 s
  "^cli: a host-backend search killed with SIGKILL"  # 18 s
  "^cli: a host search killed with SIGKILL leaves no worker"  # 8 s
  "^record: a host sweep")  # 21 s

# The labels and the RUN_SERIAL of one test, from the lists above: `base` and "fast" unless it is
# full-only, and "serial" where it runs alone.
function(kb_tier_properties name base labels_var serial_var)
  set(labels ${base})
  set(serial FALSE)
  set(full_only FALSE)
  foreach(pattern IN LISTS KB_FULL_ONLY_TESTS)
    if(name MATCHES "${pattern}")
      set(full_only TRUE)
    endif()
  endforeach()
  foreach(pattern IN LISTS KB_SERIAL_TESTS)
    if(name MATCHES "${pattern}")
      set(serial TRUE)
    endif()
  endforeach()
  if(NOT full_only)
    list(APPEND labels fast)
  endif()
  if(serial)
    list(APPEND labels serial)
  endif()
  set(${labels_var} "${labels}" PARENT_SCOPE)
  set(${serial_var} ${serial} PARENT_SCOPE)
endfunction()

# Run by ctest (build/tests/kernelbrain_test_tiers.cmake) once the programs' include files have
# defined their cases and kernelbrain_<layer>_tests_TESTS: sets every case's labels (cpu, its layer,
# fast, serial) and RUN_SERIAL. A program none of whose cases is in the fast tier gets a failing test
# in the fast tier instead, so that the fast tier keeps covering every layer.
function(kb_apply_tiers cmake_command)
  foreach(layer IN LISTS ARGN)
    set(cases kernelbrain_${layer}_tests_TESTS)
    if(NOT DEFINED ${cases})
      continue()  # not built yet: doctest's include file added a NOT_BUILT test instead
    endif()
    set(fast 0)
    foreach(name IN LISTS ${cases})
      kb_tier_properties("${name}" "cpu;${layer}" labels serial)
      set_tests_properties("${name}" PROPERTIES LABELS "${labels}" RUN_SERIAL ${serial})
      list(FIND labels fast at)  # no IN_LIST: ctest reads this file without the project's policies
      if(at GREATER -1)
        math(EXPR fast "${fast} + 1")
      else()
        # Costly: started first under ctest -j where ctest has no costs of its own yet (a fresh
        # build directory, as in CI); ctest's measured costs take over after the first run.
        set_tests_properties("${name}" PROPERTIES COST 10)
      endif()
    endforeach()
    if(fast EQUAL 0)
      add_test(tiers.kernelbrain_${layer}_tests_in_fast_tier "${cmake_command}" -E echo
        "kernelbrain_${layer}_tests: none of its cases is in the fast tier (tests/tiers.cmake)")
      set_tests_properties(tiers.kernelbrain_${layer}_tests_in_fast_tier PROPERTIES LABELS "cpu;${layer};fast"
        FAIL_REGULAR_EXPRESSION "none of its cases")
    endif()
  endforeach()
endfunction()
