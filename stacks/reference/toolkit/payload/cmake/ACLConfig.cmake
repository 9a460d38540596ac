# The ACL runtime of the CPU-simulated CANN toolkit as a CMake package: `find_package(ACL REQUIRED)`
# finds this file in <toolkit>/lib64/cmake, which only set_env.sh puts on CMAKE_PREFIX_PATH.
get_filename_component(_acl_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
if(NOT TARGET ACL::ascendcl)
  add_library(ACL::ascendcl SHARED IMPORTED)
  set_target_properties(ACL::ascendcl PROPERTIES
    IMPORTED_LOCATION "${_acl_root}/lib64/libascendcl.so"
    IMPORTED_SONAME "libascendcl.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_acl_root}/include")
endif()
set(ACL_LIBRARY_DIR "${_acl_root}/lib64")
unset(_acl_root)
