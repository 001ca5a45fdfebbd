"""The installed kit against a real hotkeyd and a real redis-server: a pinned cache key served
from copies, a pinned split counter exact, a remove folding it back, and the demand report
answered by the daemon itself.

Needs the hotkeyd binary in HOTKEYD_BINARY (the ctest test clients_python_test sets it) and
tests/lib/hotkeyd_e2e.py from the source tree; skipped, with the reason, without them.
"""

import os
import sys
import tempfile
import unittest
import urllib.request

from fixtures import RedisServer, need_redis_server, wait_until

from hotkeyd_client import HotkeyClient

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(HERE, "..", "..", "..", "tests", "lib")
WAIT = 20

RULES = """feed:
  lease: 5s
  refresh: 60s
  split_factor: 4
  pin:
    - key: "page:home"
      mode: cache
    - key: "post:likes"
      mode: split
"""


class DaemonTest(unittest.TestCase):
    def setUp(self):
        binary = os.environ.get("HOTKEYD_BINARY")
        if not binary or not os.path.exists(os.path.join(LIB, "hotkeyd_e2e.py")):
            self.skipTest("needs HOTKEYD_BINARY and the source tree's tests/lib "
                          "(ctest -R clients_python_test sets them)")
        need_redis_server()
        sys.path.insert(0, LIB)
        import hotkeyd_e2e
        self.e2e = hotkeyd_e2e
        self.work = tempfile.mkdtemp(prefix="hotkeyd-kit-daemon-")
        self.rules = os.path.join(self.work, "rules.yml")
        with open(self.rules, "w") as f:
            f.write(RULES)
        self.redis = RedisServer()
        self.addCleanup(self.redis.stop)
        self.d = hotkeyd_e2e.Hotkeyd(binary, f"--config.file={self.rules}",
                                     "--web.enable-lifecycle", work=self.work)
        self.addCleanup(self.e2e.Procs.stop_all)

    def test_the_kit_applies_a_real_daemons_fixes_and_reports_the_demand_absorbed(self):
        raw = self.redis.client()
        kit = HotkeyClient(self.redis.client(), f"http://127.0.0.1:{self.d.web}")
        self.addCleanup(kit.close)
        self.assertTrue(kit.wait_synced(WAIT))
        wait_until(lambda: {e.mode for e in kit.entries()} == {"cache", "split"}, WAIT,
                   "both pins")
        raw.set("page:home", "v1")
        gets = self.redis.calls("get")
        for _ in range(50):
            self.assertEqual(kit.get("page:home"), b"v1")
        self.assertEqual(self.redis.calls("get") - gets, 1)  # one fetch, 49 copies
        for _ in range(100):
            kit.incr("post:likes")
        self.assertEqual(kit.get("post:likes"), b"100")
        # The demand report: accepted (204) by a hotkeyd that serves it; a hotkeyd without
        # the endpoint answers 404, and the kit stops reporting to it, counting the refusal.
        wait_until(lambda: kit.stats()["demand_reports"] + kit.stats()["demand_errors"], WAIT,
                   "a demand report answered")
        s = kit.stats()
        served = s["demand_reports"] >= 1
        self.assertTrue(served or not kit._feed.followers[0].ledger.enabled, s)
        # The pin removed: the counter folds back into the key itself.
        with open(self.rules, "w") as f:
            f.write(RULES.split('    - key: "post:likes"')[0])
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{self.d.web}/-/reload", method="POST"), timeout=10).read()
        wait_until(lambda: kit.stats()["folds"] == 1, WAIT, "the fold-back")
        self.assertEqual(raw.get("post:likes"), b"100")
        (info,) = kit.entries()
        self.assertEqual(info.key, b"page:home")


if __name__ == "__main__":
    unittest.main()
