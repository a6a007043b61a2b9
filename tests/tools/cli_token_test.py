"""sidetable-cli token issue / inspect: the real binary (SIDETABLE_CLI), no
sidecar. The issued bytes are the cross-language vector of
tests/protocol/token_test.cc and client/python/tests/test_tokens.py."""

import os
import subprocess
import tempfile
import unittest

CLI = os.environ["SIDETABLE_CLI"]
KEY_B64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="  # bytes 0..31
VECTOR_1 = (
    "v=1&kid=k1&tn=Orders&spk=acme%7C2026&srk=&epk=acme%7C2026"
    "&erk=z%20%C3%A9%26%3D%25&sp=raud"
    "&st=2026-01-01T00:00:00Z&se=2026-12-31T23:59:59Z&tenant=acme"
    "&caller=acme%20web%2F1&sig=7TVzIGTRcAcESgRW-j2Hqi-IZXmE7o-fl6CfEHqInmw")


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


class CliTokenTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.key = os.path.join(self.dir.name, "token.key")
        with open(self.key, "w") as f:
            f.write(KEY_B64 + "\n")
        os.chmod(self.key, 0o600)

    def tearDown(self):
        self.dir.cleanup()

    def issue(self, *extra):
        return run("token", "issue", "--key-file", self.key, "--key-id", "k1",
                   "--tenant", "acme", "--identity", "acme web/1", *extra)

    def test_issue_prints_the_vector(self):
        rc, out, err = self.issue(
            "--table", "Orders", "--pk-start", "acme|2026", "--rk-start", "",
            "--pk-end", "acme|2026", "--rk-end", "z \u00e9&=%", "--perms", "dura",
            "--start", "2026-01-01T00:00:00Z", "--expiry", "2026-12-31T23:59:59Z")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out, VECTOR_1 + "\n")

    def test_inspect_decodes(self):
        rc, out, _ = run("token", "inspect", VECTOR_1)
        self.assertEqual(rc, 0)
        self.assertIn('rk end       "z \u00e9&=%"', out)
        self.assertIn("permissions  raud (read, add, update, delete)", out)
        self.assertIn("not verified", out)
        rc, out, err = run("token", "inspect", VECTOR_1.replace("&tenant=acme", ""))
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("missing 'tenant'", err)

    def test_relative_expiry_and_policy(self):
        rc, out, _ = self.issue("--table", "orders", "--perms", "r", "--expiry", "1h")
        self.assertEqual(rc, 0)
        self.assertIn("&se=", out)
        rc, out, _ = self.issue("--table", "orders", "--policy", "readers")
        self.assertEqual(rc, 0)
        self.assertIn("&si=readers&sig=", out)

    def test_refusals_exit_2_with_nothing_on_stdout(self):
        os.chmod(self.key, 0o640)
        rc, out, err = self.issue("--table", "orders", "--perms", "r", "--expiry", "1h")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("chmod 600", err)
        os.chmod(self.key, 0o600)
        for bad in (["--table", "orders", "--perms", "rx", "--expiry", "1h"],
                    ["--table", "orders", "--perms", "r", "--expiry", "1y"],
                    ["--table", "orders", "--perms", "r"],  # no expiry, no policy
                    ["--table", "o", "--table-prefix", "o", "--perms", "r", "--expiry", "1h"],
                    ["--table-prefix", "o", "--policy", "p"]):
            with self.subTest(bad=bad):
                rc, out, _ = self.issue(*bad)
                self.assertEqual((rc, out), (2, ""))


if __name__ == "__main__":
    unittest.main()
