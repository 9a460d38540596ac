"""Carrying out a plan: what is cached, the scheduler, one stage's build, progress, the final tags."""
