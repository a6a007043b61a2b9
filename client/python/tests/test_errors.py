"""One exception class per error code (docs/protocol.md), under the
existing SidetableError base with its attributes; create_table(exist_ok)
and delete_table(missing_ok)."""

import re
import os
import unittest

import _harness
import sidetable
from sidetable import Entity, errors

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


# The wire codes the server can send (engine/status.cc, minus OK and the
# client-side-only NoReply): kept in step by test_every_engine_code_has_a_class.
WIRE_CODES = {
    "InvalidInput": 400, "PropertyNameInvalid": 400,
    "PropertyNameTooLong": 400, "InvalidDuplicateRow": 400,
    "OutOfRangeInput": 400, "PropertyValueTooLarge": 400,
    "EntityTooLarge": 400, "TooManyProperties": 400, "KeyValueTooLarge": 400,
    "AuthorizationFailure": 403, "AuthorizationPermissionMismatch": 403,
    "TableNotFound": 404, "ResourceNotFound": 404,
    "TableAlreadyExists": 409, "EntityAlreadyExists": 409,
    "TableBeingDeleted": 409, "UpdateConditionNotSatisfied": 412,
    "RequestBodyTooLarge": 413, "InternalError": 500, "ServerBusy": 503,
    "ServiceUnavailable": 503, "InsufficientStorage": 507,
    "ReadSessionNotAvailable": 504, "InvalidResourceName": 400,
    "CommandsInBatchActOnDifferentPartitions": 400,
    "AuthenticationFailed": 403,
}


class MappingTest(unittest.TestCase):
    def test_one_class_per_code(self):
        self.assertEqual(set(errors.ERROR_CLASSES), set(WIRE_CODES))
        classes = list(errors.ERROR_CLASSES.values())
        self.assertEqual(len(set(classes)), len(classes))
        for code, cls in errors.ERROR_CLASSES.items():
            self.assertTrue(issubclass(cls, sidetable.SidetableError), code)
            self.assertIs(getattr(sidetable, cls.__name__), cls)
            e = errors.make_error(WIRE_CODES[code], code, "m", 3, 5)
            self.assertIs(type(e), cls)
            self.assertEqual((e.status, e.code, e.message, e.index, e.op),
                             (WIRE_CODES[code], code, "m", 3, 5))

    def test_every_engine_code_has_a_class(self):
        path = os.path.join(_harness.REPO, "engine", "status.cc")
        if not os.path.exists(path):
            self.skipTest("no engine/status.cc")
        with open(path) as f:
            found = dict(re.findall(r'\{Code::k\w+, "(\w+)", (\d+)\}', f.read()))
        wire = {c for c, s in found.items() if int(s) >= 400}
        self.assertEqual(wire, set(errors.ERROR_CLASSES))

    def test_groups(self):
        E = errors
        self.assertTrue(issubclass(E.TableNotFoundError, E.ResourceNotFoundError))
        self.assertTrue(issubclass(E.EntityAlreadyExistsError, E.ResourceExistsError))
        self.assertTrue(issubclass(E.TableAlreadyExistsError, E.ResourceExistsError))
        self.assertFalse(issubclass(E.TableBeingDeletedError, E.ResourceExistsError))
        self.assertTrue(issubclass(E.ServerBusyError, E.ServiceUnavailableError))
        self.assertIs(E.PreconditionFailedError, E.UpdateConditionNotSatisfiedError)
        for code, status in WIRE_CODES.items():
            if status == 400:
                self.assertTrue(issubclass(E.error_class(code), E.BadRequestError))
        self.assertTrue(issubclass(E.SidetableUnreachable, E.SidetableTimeout))

    def test_unknown_code_gets_the_base_class(self):
        e = errors.make_error(418, "Teapot", "short and stout")
        self.assertIs(type(e), sidetable.SidetableError)
        self.assertEqual((e.status, e.code), (418, "Teapot"))
        self.assertIs(errors.error_class("Teapot"), sidetable.SidetableError)


class ServerErrorsTest(unittest.TestCase):
    def setUp(self):
        self.c = SERVER.client(timeout=5.0)
        self.t = _harness.table_name("err")
        self.c.create_table(self.t)

    def tearDown(self):
        self.c.close()

    def test_codes_arrive_as_their_classes(self):
        E = errors
        self.c.insert(self.t, Entity("p", "r"))
        cases = [
            (E.EntityAlreadyExistsError, 409,
             lambda: self.c.insert(self.t, Entity("p", "r"))),
            (E.ResourceNotFoundError, 404,
             lambda: self.c.get(self.t, "p", "missing")),
            (E.TableNotFoundError, 404,
             lambda: self.c.get("Nosuchtable", "p", "r")),
            (E.TableAlreadyExistsError, 409,
             lambda: self.c.create_table(self.t)),
            (E.UpdateConditionNotSatisfiedError, 412,
             lambda: self.c.update(self.t, Entity("p", "r"),
                                   if_match='W/"1"')),
            (E.InvalidInputError, 400,
             lambda: self.c.query_page(self.t, "a eq", top=1)),
            (E.PropertyNameInvalidError, 400,
             lambda: self.c.insert(self.t, Entity("p", "x", {"1a": 1}))),
        ]
        for cls, status, fn in cases:
            with self.assertRaises(cls) as cm:
                fn()
            self.assertIs(type(cm.exception), cls)
            self.assertEqual(cm.exception.status, status)
            self.assertEqual(cm.exception.code, cls.CODE)

    def test_batch_error_keeps_its_index(self):
        b = sidetable.Batch(self.t).insert(Entity("p", "a")) \
            .insert(Entity("p", "a"))
        with self.assertRaises(errors.InvalidDuplicateRowError) as cm:
            self.c.execute(b)
        self.assertEqual(cm.exception.index, 1)

    def test_create_table_exist_ok(self):
        self.c.create_table(self.t, exist_ok=True)          # no error
        with self.assertRaises(errors.TableAlreadyExistsError):
            self.c.create_table(self.t)
        name = _harness.table_name("fresh")
        self.c.create_table(name, exist_ok=True)            # creates it
        self.assertIn(name, self.c.list_tables())

    def test_delete_table_missing_ok(self):
        name = _harness.table_name("gone")
        self.c.delete_table(name, missing_ok=True)          # no error
        with self.assertRaises(errors.TableNotFoundError):
            self.c.delete_table(name)
        self.c.delete_table(self.t, missing_ok=True)        # deletes it
        self.assertNotIn(self.t, self.c.list_tables())

    def test_exist_ok_does_not_hide_other_errors(self):
        with self.assertRaises(errors.BadRequestError):
            self.c.create_table("1bad", exist_ok=True)


if __name__ == "__main__":
    unittest.main()
