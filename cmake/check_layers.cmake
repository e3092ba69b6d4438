# Fails when a file of a daemon/ folder includes a header of a folder its library does not link.
#
#   cmake -DSOURCE_DIR=<project root> -DRULES="util=util;os=os,util;..." -P check_layers.cmake
#
# RULES comes from the jitsym_layer() calls in the root CMakeLists.txt: each folder with the
# folders it may include (itself, its DEPS and theirs). Only quoted includes of daemon/ and proto/
# are judged; daemon/main.cc, which wires every layer together, may include them all.
# daemon/util/result.h, daemon/util/byte_reader.h and daemon/util/hex.h are the base every layer may use
# (header-only, standard library only; they live in proto/ because the client shares only proto/
# with the daemon). A folder of daemon/ with no rule fails too, since none of its files would be
# built.
cmake_minimum_required(VERSION 3.22)

set(folders "")
foreach(rule IN LISTS RULES)
  string(REPLACE "=" ";" parts "${rule}")
  list(GET parts 0 folder)
  list(GET parts 1 allowed)
  string(REPLACE "," ";" allowed "${allowed}")
  set(ALLOWED_${folder} ${allowed})
  list(APPEND folders ${folder})
endforeach()

set(violations "")
file(GLOB entries RELATIVE ${SOURCE_DIR}/daemon ${SOURCE_DIR}/daemon/*)
foreach(folder IN LISTS entries)
  if(NOT IS_DIRECTORY ${SOURCE_DIR}/daemon/${folder})
    continue()
  endif()
  if(NOT folder IN_LIST folders)
    string(APPEND violations "  daemon/${folder}/ is not a layer: add a jitsym_layer(${folder} ...) "
                             "to CMakeLists.txt\n")
    continue()
  endif()
  file(GLOB_RECURSE files ${SOURCE_DIR}/daemon/${folder}/*.h ${SOURCE_DIR}/daemon/${folder}/*.cc)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"(daemon|proto)/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*$" "\\1" header "${line}")
      if(header MATCHES "^daemon/([^/]+)/")
        set(target ${CMAKE_MATCH_1})
      else()
        set(target proto)
      endif()
      if(NOT target IN_LIST ALLOWED_${folder})
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
        list(JOIN ALLOWED_${folder} ", " allowed_text)
        string(APPEND violations
               "  ${rel} includes ${header}: ${folder}/ may include only ${allowed_text}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "Layering violated (see docs/architecture.md):\n${violations}")
endif()
