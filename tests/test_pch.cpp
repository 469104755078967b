// The translation unit that owns the test programs' precompiled header (tests/CMakeLists.txt).
