# The layering rules of design.md "Layers and what each may touch", checked on every build:
#  1. nothing under tools/ includes a header from src/ (the CLI uses only include/shardkv/);
#  2. no public header includes Asio, RocksDB or Cap'n Proto;
#  3. the `shardkv` CLI binary contains no RocksDB code (it links only the client-side modules).
# Run as: cmake -DROOT=<source dir> -DCLI=<path of the shardkv binary> -P check_layering.cmake
set(failures "")

file(GLOB_RECURSE tool_sources ${ROOT}/tools/*.cc ${ROOT}/tools/*.h)
foreach(f ${tool_sources})
  file(STRINGS ${f} hits REGEX
       "#include \"(common|resp|redis|placement|lab|metrics|storage|consensus|net|cluster|clustermap|rebalance|node|client|admin)/")
  if(hits)
    string(APPEND failures "\n  ${f}: includes an internal header: ${hits}")
  endif()
endforeach()

file(GLOB public_headers ${ROOT}/include/shardkv/*.h)
foreach(f ${public_headers})
  file(STRINGS ${f} hits REGEX "#include [<\"](asio|rocksdb|capnp|kj)[/.]")
  if(hits)
    string(APPEND failures "\n  ${f}: a public header includes ${hits}")
  endif()
endforeach()

find_program(NM nm)
if(NOT NM)
  message(FATAL_ERROR "nm not found: cannot check that the CLI links no RocksDB")
endif()
execute_process(COMMAND ${NM} -C ${CLI} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm ${CLI} failed (${rc})")
endif()
string(REGEX MATCHALL "rocksdb::[A-Za-z_]+" rocks "${symbols}")
list(LENGTH rocks rocks_count)
if(rocks_count GREATER 0)
  list(GET rocks 0 example)
  string(APPEND failures "\n  ${CLI}: ${rocks_count} RocksDB symbols (e.g. ${example})")
endif()
string(LENGTH "${symbols}" symbols_length)
if(symbols_length LESS 1000)
  string(APPEND failures "\n  ${CLI}: nm printed almost nothing; is the binary stripped?")
endif()

if(failures)
  message(FATAL_ERROR "layering rules broken:${failures}")
endif()
message(STATUS "layering: tools/ uses public headers only, public headers are "
               "free of Asio/RocksDB/Cap'n Proto, the CLI has no RocksDB symbols")
