# Tests of the installed package: `cmake --install` into a temporary prefix, the prefix moved,
# then the moved copy used (cmake/install_test.sh). They install the current build, so they run
# after it (ctest runs on a built tree). Not in the sanitizer build: its static library needs the
# sanitizer runtime, which a consumer of the package does not link.
if(CONVLAB_SANITIZE)
  return()
endif()
if(CONVLAB_APP)
  add_test(NAME install_relocated_app
           COMMAND bash ${PROJECT_SOURCE_DIR}/cmake/install_test.sh app ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(install_relocated_app PROPERTIES TIMEOUT 300 LABELS install)
endif()
add_test(NAME install_relocated_consumer
         COMMAND bash ${PROJECT_SOURCE_DIR}/cmake/install_test.sh consumer ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(install_relocated_consumer PROPERTIES TIMEOUT 600 LABELS install)
