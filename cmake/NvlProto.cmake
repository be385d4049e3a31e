# nvl_add_proto_library(TARGET file1.proto ...): compiles .proto files with protoc and the gRPC C++ plugin
# into a static library. Generated headers are included as "<dir>/<name>.pb.h" relative to the source root.
get_target_property(NVL_GRPC_CPP_PLUGIN gRPC::grpc_cpp_plugin LOCATION)

function(nvl_add_proto_library target)
  set(generated)
  foreach(proto IN LISTS ARGN)
    get_filename_component(abs "${proto}" ABSOLUTE)
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${abs}")
    string(REGEX REPLACE "\\.proto$" "" stem "${rel}")
    set(out "${PROJECT_BINARY_DIR}/proto")
    list(APPEND generated "${out}/${stem}.pb.cc" "${out}/${stem}.grpc.pb.cc")
    add_custom_command(
      OUTPUT "${out}/${stem}.pb.cc" "${out}/${stem}.pb.h" "${out}/${stem}.grpc.pb.cc" "${out}/${stem}.grpc.pb.h"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${out}"
      COMMAND protobuf::protoc --proto_path=${PROJECT_SOURCE_DIR} --cpp_out=${out} --grpc_out=${out}
              --plugin=protoc-gen-grpc=${NVL_GRPC_CPP_PLUGIN} "${abs}"
      DEPENDS "${abs}" protobuf::protoc gRPC::grpc_cpp_plugin
      COMMENT "protoc ${rel}"
      VERBATIM)
  endforeach()
  add_library(${target} STATIC ${generated})
  target_include_directories(${target} SYSTEM PUBLIC "${PROJECT_BINARY_DIR}/proto")
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf gRPC::grpc++)
endfunction()
