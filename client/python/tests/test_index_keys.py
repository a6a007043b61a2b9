"""sidetable.index_keys builds index-table keys exactly as
patterns/index_table/index_keys.h does: the C++ unit tests' vectors
(tests/patterns/index_keys_test.cc), and the entries a real index holds,
built by `sidetable-cli derive` from source entities in a real sidecar."""

import datetime as dt
import os
import subprocess
import tempfile
import unittest
import uuid

import _harness
from sidetable import DateTime, Entity, Int64
from sidetable.index_keys import (IndexLayout, escape_key_text,
                                  index_value_text, make_source_row_key,
                                  parse_source_row_key, unescape_key_text,
                                  valid_key)

# HostileTexts() of index_keys_test.cc.
HOSTILE = ["", "plain", "a/b", "a\\b", "#", "?q=1", "%", "%25", "%%", "%zz",
           "|", "a|b", "||", "nul\0x", "\x01\x1f\x7f", "tab\tnewline\n",
           "\u0080\u009f", "\u00a0\u00e9", "\u65e5\u672c", "\U0001F600",
           "\uffff", " leading and trailing ", "_", "a_b"]


class VectorsTest(unittest.TestCase):
    """The expectations of tests/patterns/index_keys_test.cc, verbatim."""

    def test_escape_round_trips_hostile_text_to_valid_keys(self):
        seen = set()
        for text in HOSTILE:
            escaped = escape_key_text(text)
            self.assertTrue(valid_key(escaped), escaped)
            self.assertNotIn("|", escaped)
            self.assertEqual(unescape_key_text(escaped), text)
            self.assertNotIn(escaped, seen)
            seen.add(escaped)

    def test_spells_the_scheme_out(self):
        self.assertEqual(escape_key_text("a/b\\c#d?e%f|g"),
                         "a%2Fb%5Cc%23d%3Fe%25f%7Cg")
        self.assertEqual(escape_key_text("\0\x1f\x7f"), "%00%1F%7F")
        self.assertEqual(escape_key_text("\u0085"), "%C2%85")
        self.assertEqual(escape_key_text("caf\u00e9 _-:."), "caf\u00e9 _-:.")

    def test_unescape_accepts_only_the_canonical_form(self):
        for bad in ("%", "%2", "%2f", "%41", "%FF", "a|b"):
            with self.assertRaises(ValueError, msg=bad):
                unescape_key_text(bad)
        self.assertEqual(unescape_key_text("%25"), "%")

    def test_source_row_keys(self):
        row_keys = set()
        for pk in HOSTILE:
            for rk in HOSTILE:
                key = make_source_row_key(pk, rk)
                self.assertTrue(valid_key(key))
                self.assertNotIn(key, row_keys)
                row_keys.add(key)
                self.assertEqual(parse_source_row_key(key), (pk, rk))
        self.assertEqual(make_source_row_key("a|b", "c"), "a%7Cb|c")
        self.assertEqual(make_source_row_key("", ""), "|")
        for bad in ("nosep", "a|b|c", "a%2|b"):
            with self.assertRaises(ValueError):
                parse_source_row_key(bad)
        make_source_row_key("p" * 400, "r" * 100)
        with self.assertRaisesRegex(ValueError, "KeyValueTooLarge"):
            make_source_row_key("p" * 400, "/" * 112)

    def test_value_text_per_type(self):
        cases = [("Jones", "Jones"), (-42, "-42"),
                 (Int64(9007199254740993), "9007199254740993"),
                 (0.1, "0.1"), (2.5, "2.5"), (1e100, "1e+100"), (-0.0, "0"),
                 (float("nan"), "NaN"), (float("-inf"), "-INF"),
                 (True, "true"),
                 (DateTime.parse("2014-08-22T00:50:32.123Z"),
                  "2014-08-22T00:50:32.1230000Z"),
                 (uuid.UUID("C9DA6455-213D-42C9-9A79-3E9149A57833"),
                  "c9da6455-213d-42c9-9a79-3e9149a57833"),
                 (b"\x00\xff\x10", "00ff10")]
        for value, text in cases:
            self.assertEqual(index_value_text(value), text, value)

    def test_doubles_as_to_chars_writes_them(self):
        # std::to_chars: shortest digits, fixed or scientific, whichever is
        # shorter, fixed on a tie.
        cases = [(100.0, "100"), (1e5, "1e+05"), (123456.0, "123456"),
                 (0.001, "0.001"), (0.0001, "1e-04"), (1.5e-7, "1.5e-07"),
                 (-2.5, "-2.5"), (1e16, "1e+16"), (12345678901234567.0,
                                                   "12345678901234568"),
                 (5e-324, "5e-324"), (1.7976931348623157e308,
                                      "1.7976931348623157e+308")]
        for value, text in cases:
            self.assertEqual(index_value_text(value), text, value)

    def test_layouts(self):
        self.assertEqual(IndexLayout("{value}").partition_key("Email", "a/b"),
                         "a%2Fb")
        self.assertEqual(IndexLayout("{prefix}_{value}", "email")
                         .partition_key("Email", "j@x.com"), "email_j@x.com")
        self.assertEqual(IndexLayout(prefix="email").text, "{prefix}_{value}")
        by_property = IndexLayout("{property}_{value}")
        self.assertEqual(by_property.partition_key("Age", 7), "Age_7")
        self.assertEqual(by_property.partition_key("Age", ""), "Age_")
        self.assertEqual(IndexLayout().partition_key("X", "v"), "v")
        for layout, prefix in [("", ""), ("{prefix}", "p"),
                               ("{value}{value}", ""), ("{value", ""),
                               ("{valu}", ""), ("a/{value}", ""),
                               ("50%_{value}", ""), ("{prefix}_{value}", ""),
                               ("{value}", "p"), ("{prefix}{value}", "a#")]:
            with self.assertRaises(ValueError, msg=layout):
                IndexLayout(layout, prefix)
        with self.assertRaisesRegex(ValueError, "{nope}"):
            IndexLayout("{nope}_{value}")

    def test_too_long_values_are_not_indexed(self):
        layout = IndexLayout()
        self.assertIsNotNone(layout.partition_key("P", "x" * 512))
        self.assertIsNone(layout.partition_key("P", "x" * 513))
        self.assertIsNotNone(layout.partition_key("P", "/" * 170))
        self.assertIsNone(layout.partition_key("P", "/" * 171))
        self.assertIsNone(layout.partition_key("P", b"b" * 300))


def cli_binary():
    return os.path.join(os.path.dirname(os.path.dirname(
        _harness.server_binary())), "tools", "cli", "sidetable-cli")


class RealIndexTest(unittest.TestCase):
    """Source entities with hostile keys and values of every type; the index
    that `sidetable-cli derive` builds must hold exactly the keys the Python
    helper computes."""

    VALUES = ["a/b", "50% off", "x|y", "caf\u00e9", "\u0085ctl", "", 42,
              Int64(-7), 0.1, 1e5, 100.0, -0.0, True, b"\x00\xab",
              DateTime.parse("2014-08-22T00:50:32.1234567Z"),
              dt.datetime(2020, 2, 29, tzinfo=dt.timezone.utc),
              uuid.UUID("C9DA6455-213D-42C9-9A79-3E9149A57833")]
    KEYS = [("Sales", "1"), ("a|b", "c"), ("a", "b|c"), ("%41", "%"),
            ("p q", "\u00e9\u65e5"), ("", "")]

    @classmethod
    def setUpClass(cls):
        if not os.access(cli_binary(), os.X_OK):
            raise unittest.SkipTest("no sidetable-cli at %s" % cli_binary())
        cls.server = _harness.Server(workers=2).start()
        cls.tmp = tempfile.mkdtemp(prefix="sidetable-idx-")

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.server.stop()
            if code != 0:
                raise AssertionError("server exited with %r" % code)
        finally:
            cls.server.cleanup()

    def derive(self, source, target, settings):
        config = os.path.join(self.tmp, target + ".yaml")
        with open(config, "w") as f:
            f.write("patterns:\n  - name: index_table\n    source: %s\n"
                    "    target: %s\n%s" % (source, target, settings))
        r = subprocess.run([cli_binary(), "--endpoint", self.server.endpoint,
                            "derive", "--config", config, "--progress",
                            "never"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def check(self, settings, layout, properties):
        with self.server.client(timeout=10.0) as c:
            src = _harness.table_name("src")
            dst = _harness.table_name("idx")
            c.create_table(src)
            want = set()
            for i, value in enumerate(self.VALUES):
                pk, rk = self.KEYS[i % len(self.KEYS)]
                rk = rk + str(i)
                c.insert(src, Entity(pk, rk, {p: value for p in properties}))
                for p in properties:
                    want.add((layout.partition_key(p, value),
                              make_source_row_key(pk, rk)))
            self.derive(src, dst, settings)
            entries = list(c.query(dst))
            got = {(e.pk, e.rk) for e in entries}
            self.assertEqual(got, want)
            for e in entries:
                self.assertEqual(parse_source_row_key(e.rk),
                                 (e["SourcePartitionKey"], e["SourceRowKey"]))
            # A lookup through the index with the helper alone.
            for i, value in enumerate(self.VALUES):
                pk, rk = self.KEYS[i % len(self.KEYS)]
                found = {parse_source_row_key(e.rk) for e in c.query(
                    dst, "PartitionKey eq @pk",
                    parameters={"pk": layout.partition_key(properties[0],
                                                           value)})}
                self.assertIn((pk, rk + str(i)), found, value)

    def test_default_layout(self):
        self.check("    properties: V\n", IndexLayout(), ["V"])

    def test_prefix_layout(self):
        self.check("    properties: V\n    prefix: pre\n",
                   IndexLayout(prefix="pre"), ["V"])

    def test_property_layout_with_two_properties(self):
        self.check("    properties: [V, W]\n    layout: \"{property}_{value}\"\n",
                   IndexLayout("{property}_{value}"), ["V", "W"])


if __name__ == "__main__":
    unittest.main()
