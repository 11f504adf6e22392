"""omnigym's environment families; each sub-package registers its ids when imported."""
