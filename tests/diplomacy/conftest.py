"""The Diplomacy tests need the optional extra (the AGPL ``diplomacy`` engine); without it the
whole folder is skipped."""

import pytest

pytest.importorskip("diplomacy", reason="Diplomacy/* needs the optional extra omnigym[diplomacy]")
