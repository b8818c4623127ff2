# Layering as a build fact (docs/architecture.md): a target's sources can include only the
# folders it is given here, so e.g. core/position cannot include core/formats by accident.
#
# poslens_include_root(<target> <folder>...)
#   Makes an include root of symbolic links under the build tree holding just the listed
#   folders (relative to the project root, e.g. core/base), and adds it PUBLIC to <target>:
#   `#include "core/base/error.h"` resolves, `#include "core/formats/..."` does not unless
#   core/formats is listed or comes from a linked layer. Consumers see the union of the roots
#   of what they link, i.e. exactly the layers below them.
function(poslens_include_root target)
  set(root "${PROJECT_BINARY_DIR}/include_roots/${target}")
  foreach(folder IN LISTS ARGN)
    if(NOT IS_DIRECTORY "${PROJECT_SOURCE_DIR}/${folder}")
      message(FATAL_ERROR "poslens_include_root(${target}): no folder ${folder}")
    endif()
    get_filename_component(parent "${root}/${folder}" DIRECTORY)
    file(MAKE_DIRECTORY "${parent}")
    if(NOT EXISTS "${root}/${folder}")
      file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${folder}" "${root}/${folder}" SYMBOLIC)
    endif()
  endforeach()
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${root}>")
endfunction()
