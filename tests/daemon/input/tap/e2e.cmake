# The tap against real servers (tests/tap/tap_*_e2e.py): a real redis-server and memcached on
# free loopback ports, driven by real clients (redis-benchmark, redis-py, pymemcache), with a
# real hotkeyd capturing on lo. Included from tests/daemon/input/tap/CMakeLists.txt.
#
# They need CAP_NET_RAW (CI runs them as root) and fail, saying so, without it: a skip would
# hide a broken capture. They run serially: the flood holds 100,000 loopback connections, and
# the accuracy cases compare counts that another test's load could make libpcap drop.
# Debian's python3 (/usr/bin first): python3-redis and python3-pymemcache install there.
find_program(HOTKEY_DEBIAN_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
foreach(name redis memcached hostile instances)
  add_test(NAME tap_${name}_e2e
           COMMAND ${HOTKEY_DEBIAN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tap_${name}_e2e.py
                   $<TARGET_FILE:hotkeyd>)
  set_tests_properties(tap_${name}_e2e PROPERTIES LABELS "e2e;tap" RUN_SERIAL TRUE)
endforeach()
# Each takes 15 to 60 s on two busy cores; the limits only stop a hung server from blocking CI.
set_tests_properties(tap_redis_e2e tap_memcached_e2e tap_instances_e2e PROPERTIES TIMEOUT 180)
set_tests_properties(tap_hostile_e2e PROPERTIES TIMEOUT 300)

# One steady answer beside a real Redis whose CPU quota keeps it about 90% busy, with no
# --cluster.* flag (about 100 s): one strategy and projected loads within 10% of their median
# over 60 s of a bursty load. Skipped (77) where no cgroup with the cpu controller can be made.
add_test(NAME tap_advice_steady_e2e
         COMMAND ${HOTKEY_DEBIAN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/advice_steady_e2e.py
                 $<TARGET_FILE:hotkeyd>)
set_tests_properties(tap_advice_steady_e2e PROPERTIES
  LABELS "e2e;tap" RUN_SERIAL TRUE TIMEOUT 240 SKIP_RETURN_CODE 77)
