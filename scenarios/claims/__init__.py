"""Each paper's claims experiment: ``<paper>.yaml`` (the scenario) and ``<paper>.py`` (its claims
checker, ``check(run)``), one name per paper (``docs/experiments.md``)."""
