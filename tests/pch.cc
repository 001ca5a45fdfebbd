// The translation unit that precompiles Catch2 for every test executable (CMakeLists.txt).
