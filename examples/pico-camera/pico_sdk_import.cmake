# Locates the Raspberry Pi Pico SDK for this project; written by rip. It behaves like the
# SDK's own external/pico_sdk_import.cmake, so a project copied elsewhere keeps working:
#
#   PICO_SDK_PATH             the SDK folder, on the cmake command line or in the environment
#   PICO_SDK_FETCH_FROM_GIT   ON: download the SDK (with its submodules) when no path is given
#   PICO_SDK_FETCH_FROM_GIT_PATH  where to keep the download (default: inside the build folder)
#   PICO_SDK_FETCH_FROM_GIT_TAG   the SDK tag or branch to download (default: master)
#
# Include it before project(): the SDK's pico_sdk_init.cmake chooses the cross toolchain,
# and CMake fixes the toolchain when project() runs.

if (DEFINED ENV{PICO_SDK_PATH} AND (NOT PICO_SDK_PATH))
    set(PICO_SDK_PATH $ENV{PICO_SDK_PATH})
    message(STATUS "Pico SDK from the environment: ${PICO_SDK_PATH}")
endif ()
if (DEFINED ENV{PICO_SDK_FETCH_FROM_GIT} AND (NOT PICO_SDK_FETCH_FROM_GIT))
    set(PICO_SDK_FETCH_FROM_GIT $ENV{PICO_SDK_FETCH_FROM_GIT})
endif ()
if (DEFINED ENV{PICO_SDK_FETCH_FROM_GIT_PATH} AND (NOT PICO_SDK_FETCH_FROM_GIT_PATH))
    set(PICO_SDK_FETCH_FROM_GIT_PATH $ENV{PICO_SDK_FETCH_FROM_GIT_PATH})
endif ()
if (DEFINED ENV{PICO_SDK_FETCH_FROM_GIT_TAG} AND (NOT PICO_SDK_FETCH_FROM_GIT_TAG))
    set(PICO_SDK_FETCH_FROM_GIT_TAG $ENV{PICO_SDK_FETCH_FROM_GIT_TAG})
endif ()
if (NOT PICO_SDK_FETCH_FROM_GIT_TAG)
    set(PICO_SDK_FETCH_FROM_GIT_TAG "master")
endif ()

set(PICO_SDK_PATH "${PICO_SDK_PATH}" CACHE PATH "Path to the Raspberry Pi Pico SDK")
set(PICO_SDK_FETCH_FROM_GIT "${PICO_SDK_FETCH_FROM_GIT}" CACHE BOOL "Download the Pico SDK from git when PICO_SDK_PATH is not set")
set(PICO_SDK_FETCH_FROM_GIT_PATH "${PICO_SDK_FETCH_FROM_GIT_PATH}" CACHE FILEPATH "Where to keep the downloaded Pico SDK")
set(PICO_SDK_FETCH_FROM_GIT_TAG "${PICO_SDK_FETCH_FROM_GIT_TAG}" CACHE FILEPATH "Pico SDK tag or branch to download")

if (NOT PICO_SDK_PATH)
    if (PICO_SDK_FETCH_FROM_GIT)
        include(FetchContent)
        set(FETCHCONTENT_BASE_DIR_SAVE ${FETCHCONTENT_BASE_DIR})
        if (PICO_SDK_FETCH_FROM_GIT_PATH)
            get_filename_component(FETCHCONTENT_BASE_DIR "${PICO_SDK_FETCH_FROM_GIT_PATH}" REALPATH BASE_DIR "${CMAKE_SOURCE_DIR}")
        endif ()
        FetchContent_Declare(
            pico_sdk
            GIT_REPOSITORY https://github.com/raspberrypi/pico-sdk
            GIT_TAG ${PICO_SDK_FETCH_FROM_GIT_TAG}
            GIT_SUBMODULES_RECURSE FALSE
        )
        if (NOT pico_sdk)
            message(STATUS "Downloading the Raspberry Pi Pico SDK (${PICO_SDK_FETCH_FROM_GIT_TAG})")
            FetchContent_Populate(pico_sdk)
        endif ()
        set(PICO_SDK_PATH ${pico_sdk_SOURCE_DIR})
        set(FETCHCONTENT_BASE_DIR ${FETCHCONTENT_BASE_DIR_SAVE})
    else ()
        message(FATAL_ERROR
            "The Raspberry Pi Pico SDK was not found: set PICO_SDK_PATH to your copy of it, "
            "e.g. git clone https://github.com/raspberrypi/pico-sdk && "
            "(cd pico-sdk && git submodule update --init) && export PICO_SDK_PATH=$PWD/pico-sdk, "
            "or pass -DPICO_SDK_PATH=... to cmake, or set PICO_SDK_FETCH_FROM_GIT=ON to download it")
    endif ()
endif ()

# A relative path is taken from the build folder, as the SDK's own import takes it.
get_filename_component(PICO_SDK_PATH "${PICO_SDK_PATH}" REALPATH BASE_DIR "${CMAKE_BINARY_DIR}")
if (NOT EXISTS "${PICO_SDK_PATH}/pico_sdk_init.cmake")
    message(FATAL_ERROR
        "PICO_SDK_PATH is ${PICO_SDK_PATH}, but there is no pico_sdk_init.cmake in it: "
        "point it at the top folder of the Pico SDK")
endif ()

set(PICO_SDK_PATH ${PICO_SDK_PATH} CACHE PATH "Path to the Raspberry Pi Pico SDK" FORCE)
include(${PICO_SDK_PATH}/pico_sdk_init.cmake)
