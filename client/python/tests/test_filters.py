"""Bound parameters in $filter text: literals per Edm type, hostile
values, '@' inside string literals, missing and unused parameters; and the
same through a real sidecar."""

import datetime as dt
import unittest
import uuid

import _harness
from sidetable import DateTime, Entity, Int32, Int64, format_filter, \
    odata_literal

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


HOSTILE = ["O'Hara", "''", "'", "a' or 'a' eq 'a", "@name", "x@y.com",
           "caf\u00e9 \u65e5\u672c \U0001F600", "back\\slash", "",
           "pk' or PartitionKey ne '"]


class LiteralTest(unittest.TestCase):
    def test_literals(self):
        g = uuid.UUID("C9DA6455-213D-42C9-9A79-3E9149A57833")
        cases = [
            (True, "true"), (False, "false"), (30, "30"), (-5, "-5"),
            (2 ** 31, "2147483648L"), (Int64(7), "7L"), (Int32(7), "7"),
            (-(2 ** 63), "-9223372036854775808L"),
            (1.5, "1.5"), (1.0, "1.0"), (1e-05, "1e-05"), (2e+20, "2e+20"),
            ("O'Hara", "'O''Hara'"), (b"\x0a\x1b", "X'0A1B'"), (b"", "X''"),
            (DateTime.parse("2014-08-22T00:50:32.1234567Z"),
             "datetime'2014-08-22T00:50:32.1234567Z'"),
            (dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc),
             "datetime'2020-01-02T00:00:00.0000000Z'"),
            (g, "guid'c9da6455-213d-42c9-9a79-3e9149a57833'"),
        ]
        for value, text in cases:
            self.assertEqual(odata_literal(value), text, value)

    def test_values_without_literals(self):
        for bad in (float("nan"), float("inf"), 2 ** 63,
                    dt.datetime(2020, 1, 2)):
            with self.assertRaises(ValueError):
                odata_literal(bad)
        for bad in (None, [1], {"a": 1}):
            with self.assertRaises(TypeError):
                odata_literal(bad)


class FormatTest(unittest.TestCase):
    def test_substitutes(self):
        self.assertEqual(
            format_filter("Age gt @age and Name eq @name",
                          {"age": 30, "name": "O'Hara"}),
            "Age gt 30 and Name eq 'O''Hara'")

    def test_at_inside_string_literals_is_not_a_parameter(self):
        self.assertEqual(format_filter("Email eq 'a@b.com' and N eq @n",
                                       {"n": 1}),
                         "Email eq 'a@b.com' and N eq 1")
        self.assertEqual(format_filter("E eq 'it''s @x' or E eq @x",
                                       {"x": "@y"}),
                         "E eq 'it''s @x' or E eq '@y'")
        self.assertEqual(format_filter("B eq X'0A' and D eq datetime'2020-01-01T00:00Z'", {}),
                         "B eq X'0A' and D eq datetime'2020-01-01T00:00Z'")

    def test_a_parameter_used_twice(self):
        self.assertEqual(format_filter("a eq @v or b eq @v", {"v": 2}),
                         "a eq 2 or b eq 2")

    def test_missing_unused_and_malformed(self):
        with self.assertRaisesRegex(ValueError, "@age"):
            format_filter("Age gt @age", {})
        with self.assertRaisesRegex(ValueError, "@extra"):
            format_filter("Age gt @age", {"age": 1, "extra": 2})
        with self.assertRaisesRegex(ValueError, "@b"):
            format_filter("Age gt 1", {"b": 1})
        with self.assertRaisesRegex(ValueError, "unterminated"):
            format_filter("Name eq 'x", {})
        with self.assertRaisesRegex(ValueError, "position 7"):
            format_filter("Age gt @ and", {})
        with self.assertRaisesRegex(TypeError, "@v"):
            format_filter("a eq @v", {"v": None})

    def test_hostile_values_stay_inside_their_literal(self):
        for v in HOSTILE:
            text = format_filter("Name eq @v", {"v": v})
            self.assertEqual(text, "Name eq '" + v.replace("'", "''") + "'")


class ServerTest(unittest.TestCase):
    def setUp(self):
        self.c = SERVER.client(timeout=5.0)
        self.t = _harness.table_name("flt")
        self.c.create_table(self.t)
        for i, name in enumerate(HOSTILE):
            self.c.insert(self.t, Entity("p", "%03d" % i, {
                "Name": name, "Age": 20 + i, "Big": Int64(i),
                "When": DateTime.parse("2020-01-01T00:00:00Z"),
                "Id": uuid.UUID(int=i), "Raw": name.encode("utf-8"),
                "Score": i + 0.5, "Odd": i % 2 == 1}))

    def tearDown(self):
        self.c.close()

    def rks(self, filter, **params):
        return [e.rk for e in self.c.query(self.t, filter, parameters=params)]

    def test_each_hostile_value_finds_exactly_its_entity(self):
        for i, name in enumerate(HOSTILE):
            self.assertEqual(self.rks("Name eq @name", name=name),
                             ["%03d" % i], name)
            self.assertEqual(self.rks("Raw eq @raw and PartitionKey eq @pk",
                                      raw=name.encode("utf-8"), pk="p"),
                             ["%03d" % i], name)

    def test_every_type(self):
        self.assertEqual(self.rks("Age gt @age and Odd eq @odd",
                                  age=25, odd=True), ["007", "009"])
        self.assertEqual(self.rks("Big eq @b", b=Int64(3)), ["003"])
        self.assertEqual(self.rks("Big eq @b", b=3), [])   # Int32: no match
        self.assertEqual(self.rks("Id eq @g", g=uuid.UUID(int=4)), ["004"])
        self.assertEqual(self.rks("Score ge @s", s=8.5), ["008", "009"])
        self.assertEqual(len(self.rks(
            "When eq @w", w=dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))),
            len(HOSTILE))

    def test_query_page_and_errors_before_sending(self):
        page = self.c.query_page(self.t, "Name eq @n", parameters={"n": "''"})
        self.assertEqual([e.rk for e in page], ["001"])
        with self.assertRaises(ValueError):
            self.c.query(self.t, "Name eq @n", parameters={})
        with self.assertRaises(ValueError):
            self.c.query(self.t, None, parameters={"n": 1})


if __name__ == "__main__":
    unittest.main()
