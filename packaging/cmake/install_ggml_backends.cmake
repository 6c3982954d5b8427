# Installs every dynamically loaded ggml backend into the llama-cpp-python wheel.
#
# With GGML_CPU_ALL_VARIANTS=ON the CPU backend is built as one module per CPU
# generation (ggml-cpu-x64, ggml-cpu-haswell, ggml-cpu-skylakex, ...), picked at
# run time by ggml_backend_load_best(). llama-cpp-python 0.3.x installs a fixed
# list of targets (ggml-cpu, ggml-cuda, ...) that does not name the variants, so
# without this file the wheel ships no CPU backend at all.
#
# Used through CMAKE_ARGS, which llama-cpp-python's build passes to CMake:
#   -DCMAKE_PROJECT_llama_cpp_INCLUDE=<this file>
# CMake includes it right after llama-cpp-python's project() call; the deferred
# call runs once its CMakeLists.txt has defined every target.

function(_prefill_install_ggml_backends)
    set(ggml_src "${CMAKE_SOURCE_DIR}/vendor/llama.cpp/ggml/src")
    if(NOT EXISTS "${ggml_src}")
        message(FATAL_ERROR "prefill: ${ggml_src} not found; llama-cpp-python's layout changed")
    endif()
    get_property(targets DIRECTORY "${ggml_src}" PROPERTY BUILDSYSTEM_TARGETS)
    set(installed "")
    foreach(target IN LISTS targets)
        if(NOT target MATCHES "^ggml-cpu-")
            continue()
        endif()
        get_target_property(type ${target} TYPE)
        if(NOT type MATCHES "^(MODULE|SHARED)_LIBRARY$")
            continue()  # the *-feats helpers are object libraries linked into their variant
        endif()
        if(APPLE)
            set(rpath "@loader_path")
        else()
            set(rpath "$ORIGIN")
        endif()
        set_target_properties(${target} PROPERTIES INSTALL_RPATH "${rpath}" BUILD_WITH_INSTALL_RPATH TRUE)
        install(TARGETS ${target}
            LIBRARY DESTINATION "${SKBUILD_PLATLIB_DIR}/llama_cpp/lib"
            RUNTIME DESTINATION "${SKBUILD_PLATLIB_DIR}/llama_cpp/lib")
        list(APPEND installed ${target})
    endforeach()
    if(GGML_CPU_ALL_VARIANTS AND NOT installed)
        message(FATAL_ERROR "prefill: GGML_CPU_ALL_VARIANTS is on but no ggml-cpu-* target was found")
    endif()
    message(STATUS "prefill: installing CPU backend variants: ${installed}")
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _prefill_install_ggml_backends)
