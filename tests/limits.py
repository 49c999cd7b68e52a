"""Limits shared by tests that start a subprocess or wait on something.

:data:`HANG_GUARD_S` is a guard against a hang, never a measure of speed: it is far above
what any command a test starts needs on a slow or heavily loaded machine (no
test's outcome may depend on the machine's speed or load). A test that wants to know how
long something takes reports it (``record_property``); it does not assert on it.
"""

#: seconds a test's subprocess (or page load) may take before the test fails as hung
HANG_GUARD_S = 1800
