# Dear ImGui 1.86 from Debian's libimgui-dev: the core library (libimgui.a, found through
# pkg-config) and the GLFW + OpenGL 3 backends compiled from the sources the package ships under
# /usr/share/doc/libimgui-dev/examples/backends (no source is copied into the repository).
find_package(PkgConfig REQUIRED)
pkg_check_modules(IMGUI REQUIRED IMPORTED_TARGET imgui)
pkg_check_modules(GLFW3 REQUIRED IMPORTED_TARGET glfw3)
find_package(OpenGL REQUIRED)
set(CONVLAB_IMGUI_BACKENDS "/usr/share/doc/libimgui-dev/examples/backends" CACHE PATH
    "Directory holding imgui_impl_glfw.cpp and imgui_impl_opengl3.cpp")
foreach(f imgui_impl_glfw.cpp imgui_impl_opengl3.cpp)
  if(NOT EXISTS "${CONVLAB_IMGUI_BACKENDS}/${f}")
    message(FATAL_ERROR "${CONVLAB_IMGUI_BACKENDS}/${f} not found: install libimgui-dev")
  endif()
endforeach()
add_library(convlab_imgui_backends STATIC ${CONVLAB_IMGUI_BACKENDS}/imgui_impl_glfw.cpp
                                          ${CONVLAB_IMGUI_BACKENDS}/imgui_impl_opengl3.cpp)
# The backend headers live in /usr/include/imgui/backends.
target_include_directories(convlab_imgui_backends PUBLIC /usr/include/imgui/backends)
target_link_libraries(convlab_imgui_backends PUBLIC PkgConfig::IMGUI PkgConfig::GLFW3
                                                    OpenGL::GL ${CMAKE_DL_LIBS})
# stb_image_write (libstb-dev) writes the PNG screenshots.
pkg_check_modules(STB REQUIRED IMPORTED_TARGET stb)
