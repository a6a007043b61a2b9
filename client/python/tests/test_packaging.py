"""client/python is installable offline with Debian 12's own setuptools:
the pyproject.toml metadata is right, and `pip install --no-build-isolation
--no-index` into a throwaway venv (with the system's site packages, for
pyzmq and msgpack) gives an importable package of the same version."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import _harness
import sidetable

try:
    import tomllib
except ImportError:          # Python < 3.11
    tomllib = None


class MetadataTest(unittest.TestCase):
    @unittest.skipIf(tomllib is None, "tomllib needs Python 3.11")
    def test_pyproject(self):
        with open(os.path.join(_harness.PY_ROOT, "pyproject.toml"), "rb") as f:
            meta = tomllib.load(f)
        self.assertEqual(meta["build-system"]["build-backend"],
                         "setuptools.build_meta")
        project = meta["project"]
        self.assertEqual(project["name"], "sidetable")
        self.assertEqual(sorted(project["dependencies"]), ["msgpack", "pyzmq"])
        self.assertEqual(project["dynamic"], ["version"])
        self.assertEqual(meta["tool"]["setuptools"]["dynamic"]["version"],
                         {"attr": "sidetable.__version__"})
        # Every module of the package is in the listed package.
        self.assertEqual(meta["tool"]["setuptools"]["packages"], ["sidetable"])
        self.assertTrue(os.path.isfile(os.path.join(
            _harness.PY_ROOT, "sidetable", "aio.py")))


def _venv_available():
    try:
        import ensurepip  # noqa: F401
        import wheel      # noqa: F401  (Debian: python3-wheel)
        import setuptools  # noqa: F401
    except ImportError:
        return False
    return True


@unittest.skipUnless(_venv_available(), "needs python3-venv, python3-wheel "
                     "and python3-setuptools")
class InstallTest(unittest.TestCase):
    def test_pip_install_into_a_venv(self):
        tmp = tempfile.mkdtemp(prefix="sidetable-pip-")
        try:
            # Build from a copy: setuptools writes build/ and *.egg-info
            # next to the sources.
            src = os.path.join(tmp, "src")
            shutil.copytree(_harness.PY_ROOT, src, ignore=shutil.ignore_patterns(
                "tests", "build", "*.egg-info", "__pycache__"))
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv",
                            "--system-site-packages", venv], check=True)
            py = os.path.join(venv, "bin", "python")
            r = subprocess.run([py, "-m", "pip", "install", "--no-index",
                                "--no-build-isolation", "--quiet", src],
                               capture_output=True, text=True, timeout=240,
                               cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)     # import the installed copy
            r = subprocess.run(
                [py, "-c", "import sidetable, sidetable.aio, "
                 "sidetable.index_keys, importlib.metadata as m; "
                 "print(sidetable.__file__); print(m.version('sidetable'))"],
                capture_output=True, text=True, env=env, cwd=tmp, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            path, version = r.stdout.split()
            self.assertTrue(path.startswith(venv), path)
            self.assertEqual(version, sidetable.__version__)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
