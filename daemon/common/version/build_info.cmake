# Writes build_info.cc from build_info.cc.in at build time (cmake -P), so the git revision
# is that of the tree being built, not of the last configure. configure_file() leaves the
# output untouched when nothing changed, so an unchanged tree relinks nothing.
# In: SRC_DIR (the source tree), IN, OUT, HOTKEY_VERSION, HOTKEY_COMPILER.
find_package(Git QUIET)
set(HOTKEY_REVISION unknown)
set(HOTKEY_BRANCH unknown)
set(commit_epoch "")
if(GIT_FOUND AND EXISTS "${SRC_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC_DIR}" rev-parse HEAD
                  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND rev)
    set(HOTKEY_REVISION "${rev}")
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC_DIR}" status --porcelain
                            --untracked-files=no
                    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(changes)
      string(APPEND HOTKEY_REVISION "-dirty")
    endif()
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC_DIR}" rev-parse --abbrev-ref HEAD
                    OUTPUT_VARIABLE branch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(branch)
      set(HOTKEY_BRANCH "${branch}")
    endif()
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC_DIR}" log -1 --format=%ct
                    OUTPUT_VARIABLE commit_epoch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  set(epoch "$ENV{SOURCE_DATE_EPOCH}")
elseif(commit_epoch)
  set(epoch "${commit_epoch}")
endif()
if(epoch)
  set(ENV{SOURCE_DATE_EPOCH} "${epoch}")  # string(TIMESTAMP) honours it
endif()
string(TIMESTAMP HOTKEY_BUILD_DATE "%Y-%m-%dT%H:%M:%SZ" UTC)
set(user "$ENV{USER}")
if(NOT user)
  execute_process(COMMAND id -un OUTPUT_VARIABLE user OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
endif()
cmake_host_system_information(RESULT host QUERY HOSTNAME)
set(HOTKEY_BUILD_USER "${user}@${host}")
configure_file("${IN}" "${OUT}" @ONLY)
