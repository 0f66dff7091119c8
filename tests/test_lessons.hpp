// The repository's lessons for the tests: their folder, and a lesson file by its number.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "lesson/lesson.hpp"

namespace convlab::test {

inline const std::string kLessonDir = std::string(CONVLAB_SOURCE_DIR) + "/lessons";

// lessons/NN_*.toml for number "NN"; fails the test when there is none.
inline std::string lesson_file(const std::string& number) {
    for (const auto& f : lesson::lesson_files(kLessonDir))
        if (std::filesystem::path(f).filename().string().rfind(number + "_", 0) == 0) return f;
    FAIL("no lesson " << number);
    return "";
}

}  // namespace convlab::test
