"""sidetable.tokens: the same bytes as the C++ IssueToken (the vectors are
also in tests/protocol/token_test.cc), the canonical spelling, and key
files. Needs no server."""

import base64
import datetime as dt
import hashlib
import hmac
import os
import tempfile
import unittest

from sidetable import tokens

UTC = dt.timezone.utc

# Change these with tests/protocol/token_test.cc's kVector1 and kVector2.
VECTOR_1 = (
    "v=1&kid=k1&tn=Orders&spk=acme%7C2026&srk=&epk=acme%7C2026"
    "&erk=z%20%C3%A9%26%3D%25&sp=raud"
    "&st=2026-01-01T00:00:00Z&se=2026-12-31T23:59:59Z&tenant=acme"
    "&caller=acme%20web%2F1&sig=7TVzIGTRcAcESgRW-j2Hqi-IZXmE7o-fl6CfEHqInmw")
VECTOR_2 = ("v=1&kid=k2&tn=orders&tenant=acme&caller=svc&si=readers"
            "&sig=DuBizrHzaSUcgRGgCoZ70qqkvxBw8HGgMx4pQqy1jLE")


def spec(**kw):
    base = dict(table="orders", tenant="acme", identity="web",
                permissions="r", expiry=dt.datetime(2030, 1, 1, tzinfo=UTC))
    base.update(kw)
    return tokens.TokenSpec(**base)


class VectorTest(unittest.TestCase):
    def test_same_bytes_as_cxx(self):
        s = tokens.TokenSpec(
            table="Orders", tenant="acme", identity="acme web/1",
            start_pk="acme|2026", start_rk="", end_pk="acme|2026",
            end_rk="z \u00e9&=%", permissions="dura",
            start=dt.datetime(2026, 1, 1, tzinfo=UTC),
            expiry=dt.datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC))
        self.assertEqual(tokens.issue_token(s, "k1", bytes(range(32))), VECTOR_1)
        p = tokens.TokenSpec(table="orders", tenant="acme", identity="svc",
                             policy_id="readers")
        self.assertEqual(tokens.issue_token(p, "k2", bytes(range(32, 96))),
                         VECTOR_2)

    def test_signature_is_hmac_of_prefixed_canonical_string(self):
        key = b"k" * 32
        text = tokens.issue_token(spec(), "k1", key)
        body, _, sig = text.rpartition("&sig=")
        self.assertEqual(body, tokens.canonical_string("k1", spec()))
        mac = hmac.new(key, b"sidetable-token\n" + body.encode(),
                       hashlib.sha256).digest()
        self.assertEqual(base64.urlsafe_b64decode(sig + "="), mac)

    def test_inspect_decodes_without_verifying(self):
        fields = tokens.inspect_token(VECTOR_1)
        self.assertEqual(fields["erk"], "z \u00e9&=%")
        self.assertEqual(fields["srk"], "")
        self.assertEqual(fields["caller"], "acme web/1")
        with self.assertRaises(ValueError):
            tokens.inspect_token("v=1&who=x")

    def test_inspect_never_echoes_what_is_not_a_token(self):
        # A key file given by mistake must not reach an error message (and
        # from there a log): before, 40 characters of it did.
        secret = "c2VjcmV0LXNpZ25pbmcta2V5LWJ5dGVzLTMyLWxvbmc="
        for text in (secret, "v=1&" + secret, secret + "=x", "v=1&v=" + secret):
            with self.assertRaises(ValueError) as caught:
                tokens.inspect_token(text)
            self.assertNotIn(secret[:8], str(caught.exception))
            self.assertIn("field", str(caught.exception))


class RulesTest(unittest.TestCase):
    def test_refused_specs(self):
        key = b"a" * 32
        for bad in (dict(tenant="a b"), dict(identity=""),
                    dict(start_rk="x"), dict(end_rk="x"),
                    dict(permissions="rx"), dict(permissions="rr"),
                    dict(permissions=None), dict(expiry=None),
                    dict(table_is_prefix=True, policy_id="p"),
                    dict(expiry=dt.datetime(2030, 1, 1))):  # naive time
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                tokens.issue_token(spec(**bad), "k1", key)
        with self.assertRaises(ValueError):
            tokens.issue_token(spec(), "k1", b"a" * 31)
        with self.assertRaises(ValueError):
            tokens.issue_token(spec(), "k 1", key)

    def test_times_are_utc_seconds(self):
        t = dt.datetime(2026, 6, 1, 14, 0, 0, 999,
                        tzinfo=dt.timezone(dt.timedelta(hours=2)))
        self.assertEqual(tokens.format_time(t), "2026-06-01T12:00:00Z")


class KeyFileTest(unittest.TestCase):
    def test_decode_key(self):
        raw = bytes(range(32))
        b64 = base64.b64encode(raw).decode()
        self.assertEqual(tokens.decode_key(b64 + "\n"), raw)
        self.assertEqual(tokens.decode_key(b64.rstrip("=")), raw)
        self.assertEqual(tokens.decode_key(
            base64.urlsafe_b64encode(b"\xfb" * 33).decode()), b"\xfb" * 33)
        with self.assertRaises(ValueError):
            tokens.decode_key(base64.b64encode(raw[:31]).decode())
        with self.assertRaises(ValueError):
            tokens.decode_key("not base64!")

    def test_key_file_must_be_private(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "key")
            with open(path, "w") as f:
                f.write(base64.b64encode(bytes(range(32))).decode() + "\n")
            os.chmod(path, 0o640)
            with self.assertRaises(PermissionError):
                tokens.load_key_file(path)
            os.chmod(path, 0o600)
            self.assertEqual(tokens.load_key_file(path), bytes(range(32)))


if __name__ == "__main__":
    unittest.main()
