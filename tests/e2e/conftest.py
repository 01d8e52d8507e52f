"""The e2e tests' fixtures are in `tests/conftest.py` (shared with `tests/security/`); the helpers
many e2e modules import by this name are re-exported here."""

from tests.support.e2e import Api, cases, sleepy_spec, wait_for  # noqa: F401 - re-exported for the e2e modules
