"""Signed access tokens (docs/security.md): issue them from Python.

An application tier holding a signing key hands each tenant a token for
exactly its table and key range (the valet-key pattern)::

    from sidetable import tokens
    key = tokens.load_key_file("/etc/sidetable/token.key")
    spec = tokens.TokenSpec(table="orders", start_pk="acme|", end_pk="acme|~",
                            permissions="raud", expiry=now + timedelta(hours=1),
                            tenant="acme", identity="acme-web")
    text = tokens.issue_token(spec, "k1", key)

Without a key, a client whose own token holds ``m`` can have the sidecar
sign one within its scope: ``Client.issue_token(spec)`` (docs/security.md,
"Issuing tokens").

The text is byte-for-byte what ``sidetable-cli token issue`` and the C++
``token::IssueToken`` (protocol/token.h) produce for the same fields: one
canonical spelling, HMAC-SHA256 over ``"sidetable-token\\n"`` followed by the
text before ``&sig=``. This module checks the rules a caller is likely to
break; the sidecar's parser is the authority on the rest.
"""

import base64
import datetime as _dt
import hashlib
import hmac
import os
import re
import stat
from dataclasses import dataclass
from typing import Optional

__all__ = ["PERMISSIONS", "TokenSpec", "canonical_string", "spec_fields", "issue_token",
           "inspect_token", "format_time", "decode_key", "load_key_file"]

#: Permission letters in their canonical order: read, add, update, delete,
#: manage tables, change log.
PERMISSIONS = "raudmc"
MIN_KEY_BYTES = 32
_SIGNING_PREFIX = b"sidetable-token\n"
_FIELDS = ("v", "kid", "tn", "tp", "spk", "srk", "epk", "erk", "sp", "st",
           "se", "tenant", "caller", "si", "sig")
_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  b"0123456789-._~:")
_LABEL = re.compile(r"[A-Za-z0-9._-]{1,64}\Z")


@dataclass
class TokenSpec:
    """What a token grants (the fields of protocol/token.h's TokenSpec).

    Key bounds are inclusive and compare as (PartitionKey, RowKey) pairs;
    ``None`` leaves a bound off (``""`` is a real key). ``permissions`` is a
    string of letters of ``raudmc``; times are timezone-aware datetimes.
    """
    table: str
    tenant: str
    identity: str
    table_is_prefix: bool = False
    start_pk: Optional[str] = None
    start_rk: Optional[str] = None
    end_pk: Optional[str] = None
    end_rk: Optional[str] = None
    permissions: Optional[str] = None
    start: Optional[_dt.datetime] = None
    expiry: Optional[_dt.datetime] = None
    policy_id: str = ""


def _encode(value):
    out = []
    for b in value.encode("utf-8"):
        out.append(chr(b) if b in _KEPT else "%%%02X" % b)
    return "".join(out)


def format_time(t):
    """``2026-12-01T20:32:41Z``: UTC, whole seconds (fractions dropped)."""
    if t.tzinfo is None:
        raise ValueError("token times must be timezone-aware (UTC)")
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _permissions(letters):
    if not letters or any(c not in PERMISSIONS for c in letters) or \
            len(set(letters)) != len(letters):
        raise ValueError("permissions must be distinct letters of raudmc")
    return "".join(c for c in PERMISSIONS if c in letters)


def spec_fields(spec):
    """The fields of ``spec`` as the token writes them, in order, unescaped:
    ``[("tn", "orders"), ("sp", "ra"), ("se", "2026-...Z"), ...]``. As a
    dict, this is the ``spec`` of the IssueToken request (docs/protocol.md),
    which ``Client.issue_token`` sends."""
    fields = [("tp" if spec.table_is_prefix else "tn", spec.table)]
    for name, value in (("spk", spec.start_pk), ("srk", spec.start_rk),
                        ("epk", spec.end_pk), ("erk", spec.end_rk)):
        if value is not None:
            fields.append((name, value))
    if spec.permissions is not None:
        fields.append(("sp", _permissions(spec.permissions)))
    if spec.start is not None:
        fields.append(("st", format_time(spec.start)))
    if spec.expiry is not None:
        fields.append(("se", format_time(spec.expiry)))
    fields += [("tenant", spec.tenant), ("caller", spec.identity)]
    if spec.policy_id:
        fields.append(("si", spec.policy_id))
    return fields


def canonical_string(key_id, spec):
    """The token text without ``&sig=...``: the signed fields, in order."""
    fields = [("v", "1"), ("kid", key_id)] + spec_fields(spec)
    return "&".join("%s=%s" % (k, _encode(v)) for k, v in fields)


def issue_token(spec, key_id, key):
    """The signed token text. ``key`` is bytes (at least 32)."""
    if len(key) < MIN_KEY_BYTES:
        raise ValueError("a signing key needs at least 32 bytes")
    if not _LABEL.match(key_id):
        raise ValueError("key id must be 1-64 of [A-Za-z0-9._-]")
    if not _LABEL.match(spec.tenant):
        raise ValueError("tenant must be 1-64 of [A-Za-z0-9._-]")
    if not spec.identity:
        raise ValueError("identity is required")
    if spec.start_rk is not None and spec.start_pk is None:
        raise ValueError("start_rk needs start_pk")
    if spec.end_rk is not None and spec.end_pk is None:
        raise ValueError("end_rk needs end_pk")
    if not spec.policy_id and (spec.permissions is None or spec.expiry is None):
        raise ValueError("permissions and expiry are required without a "
                         "stored policy")
    if spec.policy_id and spec.table_is_prefix:
        raise ValueError("a stored policy belongs to one table, not a prefix")
    text = canonical_string(key_id, spec)
    mac = hmac.new(bytes(key), _SIGNING_PREFIX + text.encode("utf-8"),
                   hashlib.sha256).digest()
    return text + "&sig=" + base64.urlsafe_b64encode(mac).decode().rstrip("=")


def inspect_token(text):
    """The fields of a token as ``{name: value}``, decoded, NOT verified."""
    from urllib.parse import unquote
    out = {}
    for number, pair in enumerate(text.split("&"), 1):
        name, sep, value = pair.partition("=")
        # The text is not echoed: what is not a token may be a secret given
        # by mistake (a key file's contents), as the sidecar's own parser
        # says only which field is wrong (protocol/token_codec.cc).
        if not sep:
            raise ValueError("not a token: field %d has no '='" % number)
        if name not in _FIELDS:
            raise ValueError("not a token: field %d has an unknown name "
                             "(the names are %s)" % (number, ", ".join(_FIELDS)))
        if name in out:
            raise ValueError("not a token: field %d repeats %s" % (number, name))
        out[name] = unquote(value, errors="strict")
    return out


def decode_key(text):
    """A key as written in a key file: base64 (standard or URL-safe, padding
    optional) of at least 32 bytes."""
    text = text.strip()
    alt = b"-_" if ("-" in text or "_" in text) else b"+/"
    raw = base64.b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4),
                           altchars=alt, validate=True)
    if len(raw) < MIN_KEY_BYTES:
        raise ValueError("key is %d bytes; at least 32 are needed" % len(raw))
    return raw


def load_key_file(path):
    """Reads a key file; refuses one its group or others may access."""
    mode = os.stat(path).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise PermissionError("key file %s is accessible by group or others: "
                              "chmod 600 %s" % (path, path))
    with open(path) as f:
        return decode_key(f.read())
