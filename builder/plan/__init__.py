"""From a lock to a plan: inputs located, Dockerfiles rendered from the packaged templates,
stages keyed, and the reasons a stage must build."""
