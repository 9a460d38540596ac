"""Checks of what was built: probes in each stage, the smoke launch, diagnosis of known failures."""
